// The write fence over a fake transactional client: open() takes the fence (claims the next
// epoch without a lease, ending the session of another process's writer first; publishes its
// session under a lease); a batch's writes commit only with the fence statement (the
// namespace's checkpoint at this writer's epoch) as their transaction's last statement; when it
// matches nothing the transaction is not committed and the failure says the fence moved (not
// transient); a transaction that fails transiently is tried again in place, then in halves,
// and committed() says how much of a failed batch is written; a large batch is several fenced
// transactions, cut by what its updates matched (no read first); a statement refused for good is
// written again one fenced write at a time, so only it becomes a dead letter.
#include "sink/fenced_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "finds_nothing.h"

namespace denormd::sink {
namespace {

bson::document lsid(std::uint8_t n) {
  return bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, n)}}};
}

// The server side: the checkpoint document's fence fields, what committed, what was killed.
// Statements are lines ("update db.coll <filter>", "insert db.coll", "fence"); each
// transaction's lines go to `committed` on commit, else nowhere. A bulk whose first filter is
// `refuse` gets a write error (and aborts its transaction, as MongoDB's does); the next
// `conflicts` commits fail with a write conflict.
class fake_store {
 public:
  std::int64_t epoch = 0;  // the checkpoint's leaseEpoch (0: none)
  std::optional<bson::document> writer;
  std::string refuse;
  int conflicts = 0;
  std::string conflict_with;             // a transaction writing this filter always conflicts
  std::size_t documents_per_update = 1;  // what each multi-document update selects
  std::vector<std::vector<std::string>> committed;
  std::vector<std::string> reads;  // "find db.coll <filter> limit n"
  std::vector<bson::document> killed;
  int transactions = 0;
};

// What the server answers in a transaction it aborted.
mongo::driver_error aborted() {
  return mongo::driver_error{mongo::driver_error::origin::server,
                             251,
                             "no such transaction",
                             {"TransientTransactionError"}};
}

using fakes::finds_nothing;

class fake_transaction final : public finds_nothing<mongo::transaction> {
 public:
  explicit fake_transaction(fake_store& s) : s_(s) {}

  bson::document session_id() const override { return lsid(1); }

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool) override {
    if (aborted_) return mongo::failure(aborted());
    mongo::bulk_outcome out;
    if (coll == "denormd_checkpoints") {
      EXPECT_EQ(db, "meta");
      EXPECT_EQ(bson::to_json(*requests.front().filter),
                R"({"_id":"shop.customers","leaseEpoch":)" + std::to_string(fenced_at_) + "}");
      EXPECT_EQ(bson::to_json(*requests.front().update), R"({"$inc":{"fenced":1}})");
      lines_.push_back("fence");
      out.matched = s_.epoch == fenced_at_ ? 1 : 0;
      return out;
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (bson::to_json(*requests[i].filter) == s_.refuse) {
        aborted_ = true;
        out.failed_index = i;
        out.write_error =
            mongo::driver_error{mongo::driver_error::origin::server, 17419, "too large", {}};
        return out;
      }
      lines_.push_back("update " + db + "." + coll + " " + bson::to_json(*requests[i].filter));
      out.matched += requests[i].multi ? static_cast<std::int64_t>(s_.documents_per_update) : 1;
    }
    return out;
  }
  mongo::status insert_one(const std::string& db, const std::string& coll,
                           const bson::document&) override {
    if (aborted_) return mongo::failure(aborted());
    lines_.push_back("insert " + db + "." + coll);
    return {};
  }
  mongo::status find_each(const std::string&, const std::string&, const bson::document&,
                          const mongo::find_options&,
                          const std::function<bool(bson::document&&)>&) override {
    if (aborted_) return mongo::failure(aborted());
    return {};
  }
  mongo::status commit() override {
    if (aborted_) return mongo::failure(aborted());
    const bool hot = !s_.conflict_with.empty() &&
                     std::find(lines_.begin(), lines_.end(),
                               "update shop.orders " + s_.conflict_with) != lines_.end();
    if (hot || s_.conflicts > 0) {
      if (!hot) --s_.conflicts;
      return mongo::failure(mongo::driver_error{mongo::driver_error::origin::server,
                                                112,
                                                "WriteConflict",
                                                {"TransientTransactionError"}});
    }
    s_.committed.push_back(lines_);
    return {};
  }
  void expect_fence_at(std::int64_t epoch) { fenced_at_ = epoch; }

 private:
  fake_store& s_;
  std::vector<std::string> lines_;
  bool aborted_ = false;
  std::int64_t fenced_at_ = 0;
};

class fake_session final : public mongo::session {
 public:
  fake_session(fake_store& s, std::int64_t& fenced_at) : s_(s), fenced_at_(fenced_at) {}
  bson::document id() const override { return lsid(1); }
  mongo::result<std::unique_ptr<mongo::transaction>> start_transaction() override {
    ++s_.transactions;
    auto t = std::make_unique<fake_transaction>(s_);
    t->expect_fence_at(fenced_at_);
    return std::unique_ptr<mongo::transaction>(std::move(t));
  }

 private:
  fake_store& s_;
  std::int64_t& fenced_at_;
};

// Writes data only in transactions (a write outside one would be unfenced); outside them it
// reads what the updates select, and keeps the checkpoint document's fence fields.
class fake_client final : public finds_nothing<mongo::document_client> {
 public:
  fake_store store;
  std::int64_t fenced_at = 0;  // the epoch the writer is expected to fence with

  mongo::result<std::unique_ptr<mongo::session>> start_session() override {
    return std::unique_ptr<mongo::session>(std::make_unique<fake_session>(store, fenced_at));
  }
  mongo::result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                                  const bson::document& filter,
                                                  const mongo::find_options& opts) override {
    store.reads.push_back("find " + db + "." + coll + " " + bson::to_json(filter) + " limit " +
                          std::to_string(opts.limit));
    const bson::value* any = filter.get("$or");
    const std::size_t selected =
        store.documents_per_update * (any != nullptr ? any->as_array().size() : 1);
    std::vector<bson::document> out;
    for (std::size_t i = 0; i < selected && (opts.limit == 0 || i < std::size_t(opts.limit)); ++i)
      out.push_back(bson::document{{"_id", static_cast<std::int64_t>(i)}});
    return out;
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string& db,
                                                        const std::string& coll,
                                                        const bson::document& filter) override {
    EXPECT_EQ(db + "." + coll, "meta.denormd_checkpoints");
    EXPECT_EQ(bson::to_json(filter), R"({"_id":"shop.customers"})");
    if (store.epoch == 0 && !store.writer) return std::optional<bson::document>{};
    bson::document doc{{"_id", "shop.customers"}};
    if (store.epoch != 0) doc.append("leaseEpoch", store.epoch);
    if (store.writer) doc.append("writer", *store.writer);
    return std::optional<bson::document>(std::move(doc));
  }
  // The claim: {_id, leaseEpoch: was | $exists false} -> $set {leaseEpoch, writer}.
  mongo::result<mongo::bulk_outcome> update_one_within(const std::string&, const std::string& coll,
                                                       const mongo::write_request& r,
                                                       std::chrono::milliseconds) override {
    EXPECT_EQ(coll, "denormd_checkpoints");
    mongo::bulk_outcome out;
    const bson::value* was = r.filter->get("leaseEpoch");
    const bool matches = was->is_document() ? store.epoch == 0 : was->to_double() == store.epoch;
    if (!matches) return out;
    const auto& set = r.update->get("$set")->as_document();
    store.epoch = static_cast<std::int64_t>(set.get("leaseEpoch")->to_double());
    store.writer = set.get("writer")->as_document();
    out.matched = 1;
    return out;
  }
  // Outside a transaction only publish_writer: {_id, leaseEpoch} -> $set {writer}.
  mongo::result<mongo::bulk_outcome> update_bulk(const std::string&, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool) override {
    EXPECT_EQ(coll, "denormd_checkpoints") << "an unfenced write";
    mongo::bulk_outcome out;
    if (requests.front().filter->get("leaseEpoch")->to_double() != store.epoch) return out;
    store.writer = requests.front().update->get("$set")->as_document().get("writer")->as_document();
    out.matched = 1;
    return out;
  }
  mongo::status insert_one(const std::string&, const std::string&, const bson::document&) override {
    ADD_FAILURE() << "an unfenced insert";
    return {};
  }
  mongo::status kill_sessions(const std::vector<bson::document>& lsids) override {
    store.killed.insert(store.killed.end(), lsids.begin(), lsids.end());
    return {};
  }
  // As find(): the _ids of what an update selects, a read recorded.
  mongo::status find_each(const std::string& db, const std::string& coll,
                          const bson::document& filter, const mongo::find_options& opts,
                          const std::function<bool(bson::document&&)>& each) override {
    auto found = find(db, coll, filter, opts);
    for (auto& d : *found) {
      if (!each(std::move(d))) break;
    }
    return {};
  }
};

class fenced_writer_test : public ::testing::Test {
 protected:
  fenced_writer_test() : metrics_("test") {
    auto r = config::parse_mapping("test.json", R"({"name":"oc","kind":"copy",
      "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
      "into":"customer","fields":{"name":"name"}})",
                                   "shop");
    EXPECT_TRUE(r.has_value());
    mappings_ = std::move(r).value();
  }

  // Opened under a lease at epoch 7 (the checkpoint marked so by the takeover).
  fenced_writer make(std::size_t max_ops = fenced_writer::default_max_ops,
                     std::size_t max_documents = fenced_writer::default_max_documents) {
    fenced_writer w(client_, metrics_, writer_options{"meta", false},
                    write_fence{"meta", source_, "this-process"}, max_ops, max_documents);
    client_.store.epoch = 7;
    client_.fenced_at = 7;
    EXPECT_EQ(w.open(7).value(), 7);
    return w;
  }

  // Renames of the orders of customers 1..n (`many`: multi-document updates).
  std::vector<mapping::write_op> renames(int n, bool many = false) const {
    std::vector<mapping::write_op> ops;
    for (int key = 1; key <= n; ++key) {
      mapping::write_op op;
      op.source_mapping = &mappings_.front();
      op.target = mappings_.front().target;
      mapping::update_write w;
      w.filter = bson::document{{"customerId", key}};
      w.update = bson::document{{"$set", bson::document{{"customer.name", "n"}}}};
      w.many = many;
      op.what = std::move(w);
      ops.push_back(std::move(op));
    }
    return ops;
  }

  // The value of one series of /metrics (0 when absent).
  double metric(const std::string& series) const {
    const std::string text = metrics_.serialize();
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + series.size() + 2));
  }
  double writes(const std::string& result) const {
    return metric(R"(denormd_writes_total{mapping="oc",result=")" + result + "\"}");
  }

  static std::string update(int key) {
    return "update shop.orders {\"customerId\":" + std::to_string(key) + "}";
  }

  fake_client client_;
  metrics::metrics metrics_;
  std::vector<mapping::mapping> mappings_;
  const mapping::ns source_{"shop", "customers"};
  const std::vector<bson::document> tokens_{bson::document{{"_data", "t0"}}};
};

TEST_F(fenced_writer_test, the_writes_commit_with_the_fence_as_their_last_statement) {
  auto w = make();
  ASSERT_TRUE(w.apply(renames(2), tokens_, source_));
  ASSERT_EQ(client_.store.committed.size(), 1u);
  EXPECT_EQ(client_.store.committed[0], (std::vector<std::string>{update(1), update(2), "fence"}));
}

TEST_F(fenced_writer_test, without_a_lease_open_claims_the_next_epoch_and_ends_the_old_writer) {
  client_.store.epoch = 3;
  client_.store.writer = bson::document{{"lsid", lsid(9)}, {"process", "host:1:dead"}};
  fenced_writer w(client_, metrics_, writer_options{"meta", false},
                  write_fence{"meta", source_, "this-process"});
  auto epoch = w.open(0);
  ASSERT_TRUE(epoch) << epoch.error().to_string();
  EXPECT_EQ(*epoch, 4);
  EXPECT_EQ(client_.store.epoch, 4);
  // The previous process's session is ended first: a transaction it left open frees the
  // checkpoint document (and what it wrote) at once.
  ASSERT_EQ(client_.store.killed.size(), 1u);
  EXPECT_EQ(bson::to_json(client_.store.killed[0]), bson::to_json(lsid(9)));
  EXPECT_EQ(bson::to_json(*client_.store.writer),
            bson::to_json(bson::document{{"lsid", lsid(1)}, {"process", "this-process"}}));
  // Its writes fence with the new epoch.
  client_.fenced_at = 4;
  ASSERT_TRUE(w.apply(renames(1), tokens_, source_));
  EXPECT_EQ(client_.store.committed.size(), 1u);
  // Opened again (after a failure), it claims again, and never ends its own session.
  EXPECT_EQ(w.open(0).value(), 5);
  EXPECT_EQ(client_.store.killed.size(), 1u);
}

TEST_F(fenced_writer_test, a_first_claim_creates_the_fence) {
  fenced_writer w(client_, metrics_, writer_options{"meta", false},
                  write_fence{"meta", source_, "this-process"});
  EXPECT_EQ(w.open(0).value(), 1);
  EXPECT_TRUE(client_.store.killed.empty());
}

TEST_F(fenced_writer_test, under_a_lease_open_publishes_its_session_or_finds_the_lease_moved) {
  client_.store.epoch = 8;  // taken over again since
  fenced_writer w(client_, metrics_, writer_options{"meta", false},
                  write_fence{"meta", source_, "this-process"});
  auto moved = w.open(7);
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code, mongo::lease_moved_code);
  EXPECT_FALSE(client_.store.writer.has_value());
  EXPECT_EQ(w.open(8).value(), 8);
  EXPECT_TRUE(client_.store.writer.has_value());
  EXPECT_TRUE(client_.store.killed.empty());  // the takeover ends the old writer, not open()
}

TEST_F(fenced_writer_test, a_moved_fence_commits_nothing_and_is_not_transient) {
  auto w = make();
  client_.store.epoch = 8;  // a takeover, or another process's claim
  auto st = w.apply(renames(2), tokens_, source_);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, mongo::lease_moved_code);
  EXPECT_EQ(st.error().metric_code(), "lease_moved");
  EXPECT_FALSE(st.error().transient());
  EXPECT_TRUE(client_.store.committed.empty());
  EXPECT_EQ(w.committed(), 0u);
  // Nothing landed, so nothing is counted as written.
  EXPECT_EQ(writes("ok"), 0);
}

TEST_F(fenced_writer_test, a_large_batch_is_several_fenced_transactions) {
  auto w = make(2);
  ASSERT_TRUE(w.apply(renames(5), tokens_, source_));
  EXPECT_EQ(
      client_.store.committed,
      (std::vector<std::vector<std::string>>{
          {update(1), update(2), "fence"}, {update(3), update(4), "fence"}, {update(5), "fence"}}));
}

TEST_F(fenced_writer_test, a_conflicting_transaction_is_tried_again_in_place_then_in_halves) {
  auto w = make();
  client_.store.conflicts = fenced_writer::tries_in_place;  // the whole fails every try
  ASSERT_TRUE(w.apply(renames(4), tokens_, source_));
  EXPECT_EQ(client_.store.committed,
            (std::vector<std::vector<std::string>>{{update(1), update(2), "fence"},
                                                   {update(3), update(4), "fence"}}));
  EXPECT_EQ(writes("ok"), 4);
}

TEST_F(fenced_writer_test, a_batch_cut_short_says_how_much_of_it_committed) {
  auto w = make(2);
  client_.store.conflicts = 1;
  client_.store.conflict_with = R"({"customerId":3})";
  auto st = w.apply(renames(4), tokens_, source_);
  // 1-2 failed once, then committed in place; 3-4 failed every try, then 3 alone did too.
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, 112u);
  EXPECT_EQ(w.committed(), 2u);
  EXPECT_EQ(client_.store.committed,
            (std::vector<std::vector<std::string>>{{update(1), update(2), "fence"}}));
}

TEST_F(fenced_writer_test, updates_are_written_without_reading_what_they_select_first) {
  auto w = make();
  client_.store.documents_per_update = 10;
  ASSERT_TRUE(w.apply(renames(3, true), tokens_, source_));
  EXPECT_TRUE(client_.store.reads.empty());
  EXPECT_EQ(client_.store.committed.size(), 1u);
  EXPECT_EQ(client_.store.transactions, 1);
}

TEST_F(fenced_writer_test, a_transaction_that_matched_more_than_it_may_hold_is_aborted_and_halved) {
  auto w = make(fenced_writer::default_max_ops, 25);
  client_.store.documents_per_update = 10;
  ASSERT_TRUE(w.apply(renames(5, true), tokens_, source_));
  // 1-5 matched 50 (over 25): aborted; 1-2 (20) commits, 3-5 (30) is aborted, then 3 and 4-5.
  EXPECT_TRUE(client_.store.reads.empty());
  EXPECT_EQ(client_.store.transactions, 5);
  EXPECT_EQ(
      client_.store.committed,
      (std::vector<std::vector<std::string>>{
          {update(1), update(2), "fence"}, {update(3), "fence"}, {update(4), update(5), "fence"}}));
  EXPECT_EQ(w.committed(), 5u);
}

TEST_F(fenced_writer_test, what_updates_matched_sizes_the_next_transactions) {
  auto w = make(fenced_writer::default_max_ops, 100);
  client_.store.documents_per_update = 10;
  ASSERT_TRUE(w.apply(renames(2, true), tokens_, source_));
  ASSERT_EQ(client_.store.transactions, 1);
  // 10 documents an update: 5 updates a transaction (half of 100), none aborted.
  ASSERT_TRUE(w.apply(renames(12, true), tokens_, source_));
  EXPECT_EQ(client_.store.transactions, 4);
  ASSERT_EQ(client_.store.committed.size(), 4u);
  EXPECT_EQ(client_.store.committed[1].size(), 6u);  // 5 updates and the fence
  EXPECT_EQ(client_.store.committed[3].size(), 3u);
  // The fan-out grows to 40: the next transaction (5 updates, 200) is aborted, learns it, and
  // its halves go on; from then on one update a transaction (half of 100 at 40 each).
  client_.store.documents_per_update = 40;
  ASSERT_TRUE(w.apply(renames(5, true), tokens_, source_));
  EXPECT_EQ(client_.store.transactions, 4 + 5);  // 1-5 aborted; 1-2; 3-5 aborted; 3; 4-5
  const int transactions = client_.store.transactions;
  ASSERT_TRUE(w.apply(renames(3, true), tokens_, source_));
  EXPECT_EQ(client_.store.transactions, transactions + 3);
  EXPECT_TRUE(client_.store.reads.empty());
}

TEST_F(fenced_writer_test, a_batch_over_the_limit_costs_no_read_and_one_aborted_transaction) {
  // 200 updates of 10 documents each, 1,000 documents a transaction: the whole is aborted, then
  // each half commits.
  auto w = make(500, 1000);
  client_.store.documents_per_update = 10;
  ASSERT_TRUE(w.apply(renames(200, true), tokens_, source_));
  EXPECT_TRUE(client_.store.reads.empty());
  EXPECT_EQ(client_.store.transactions, 3);
  ASSERT_EQ(client_.store.committed.size(), 2u);
  EXPECT_EQ(client_.store.committed[0].size(), 101u);  // 100 updates and the fence
  EXPECT_EQ(w.committed(), 200u);
}

TEST_F(fenced_writer_test, an_update_over_the_limit_is_paged_and_its_mapping_asked_first_later) {
  auto w = make(fenced_writer::default_max_ops, 25);
  client_.store.documents_per_update = 40;
  ASSERT_TRUE(w.apply(renames(1, true), tokens_, source_));
  // Tried whole once (aborted: 40 over 25), then its 40 documents in pages of 25 and 15.
  EXPECT_EQ(client_.store.transactions, 3);
  ASSERT_EQ(client_.store.committed.size(), 2u);
  EXPECT_EQ(w.committed(), 1u);
  ASSERT_EQ(client_.store.reads.size(), 1u);  // the _ids, read once for the pages
  EXPECT_EQ(client_.store.reads[0], R"(find shop.orders {"customerId":1} limit 0)");

  // The mapping fanned out past the limit: its next update is asked first (26 _ids at most),
  // and one as large goes to pages at once, never tried whole again.
  ASSERT_TRUE(w.apply(renames(1, true), tokens_, source_));
  EXPECT_EQ(client_.store.transactions, 3 + 2);
  ASSERT_EQ(client_.store.reads.size(), 3u);
  EXPECT_EQ(client_.store.reads[1], R"(find shop.orders {"customerId":1} limit 26)");
  // Ones within the limit after the question are written as before (one a transaction: the
  // fan-out of 40 just seen is remembered).
  client_.store.documents_per_update = 3;
  ASSERT_TRUE(w.apply(renames(2, true), tokens_, source_));
  EXPECT_EQ(client_.store.reads.size(), 5u);
  EXPECT_EQ(client_.store.transactions, 3 + 2 + 2);
  EXPECT_EQ(client_.store.committed.back(), (std::vector<std::string>{update(2), "fence"}));
  EXPECT_EQ(w.committed(), 2u);
}

TEST_F(fenced_writer_test, a_refused_statement_alone_becomes_a_fenced_dead_letter) {
  client_.store.refuse = R"({"customerId":2})";
  auto w = make();
  ASSERT_TRUE(w.apply(renames(3), tokens_, source_));
  // The batch's transaction was aborted at the refusal; then each write call was fenced on
  // its own: the statement before the refused one again, the letter, the one after.
  EXPECT_EQ(client_.store.committed,
            (std::vector<std::vector<std::string>>{{update(1), "fence"},
                                                   {"insert meta.denormd_deadletters", "fence"},
                                                   {update(3), "fence"}}));
  // Counted once, as written in the end: the aborted transaction counts nothing.
  EXPECT_EQ(writes("ok"), 2);
  EXPECT_EQ(writes("rejected"), 1);
  EXPECT_EQ(metric(R"(denormd_deadletters_total{mapping="oc"})"), 1);
}

TEST_F(fenced_writer_test, writes_are_counted_once_their_transaction_commits) {
  auto w = make(2);
  ASSERT_TRUE(w.apply(renames(3), tokens_, source_));
  EXPECT_EQ(writes("ok"), 3);
}

TEST_F(fenced_writer_test, fence_outcomes) {
  const write_fence f{"meta", source_, "p"};
  mongo::bulk_outcome matched;
  matched.matched = 1;
  EXPECT_TRUE(fence_held(f, 3, matched));
  EXPECT_EQ(fence_held(f, 3, mongo::bulk_outcome{}).error().code, mongo::lease_moved_code);
  // A conflict with a takeover under way is transient: the retry's fence decides.
  const mongo::driver_error conflict{
      mongo::driver_error::origin::server, 112, "WriteConflict", {"TransientTransactionError"}};
  auto st = fence_held(f, 3, mongo::result<mongo::bulk_outcome>(mongo::failure(conflict)));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, 112u);
  EXPECT_TRUE(st.error().transient());
}

}  // namespace
}  // namespace denormd::sink
