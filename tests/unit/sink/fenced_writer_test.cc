// The fence under --ha over a fake transactional client: a batch's writes commit only with the
// fence statement (the lease row matched at {owner, epoch} and not expired by the server's
// clock) as their transaction's last statement; when it matches nothing the transaction is
// not committed and the failure says the lease moved (not transient); a large batch is several
// fenced transactions; a statement refused for good is written again one fenced write at a
// time, so only it becomes a dead letter.
#include "sink/fenced_writer.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "finds_nothing.h"

namespace denormd::sink {
namespace {

// Statements are lines ("bulk db.coll <n>", "insert db.coll", "fence"); each transaction's lines
// go to `committed` on commit, else nowhere. The fence matches while `lease_held`; a bulk
// whose first filter is `refuse` gets a write error (and aborts its transaction, as MongoDB's
// does). Reads see nothing.
class fake_store {
 public:
  bool lease_held = true;
  std::string refuse;
  std::vector<std::vector<std::string>> committed;
  int started = 0;
};

// What the server answers in a transaction it aborted.
mongo::driver_error aborted() {
  return mongo::driver_error{mongo::driver_error::origin::server,
                             251,
                             "no such transaction",
                             {"TransientTransactionError"}};
}

// Reads find nothing (the fence does not depend on them).
using fakes::finds_nothing;

class fake_transaction final : public finds_nothing<mongo::transaction> {
 public:
  explicit fake_transaction(fake_store& s) : s_(s) {}

  // Transaction n runs on session n.
  bson::document session_id() const override {
    return bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(
                                                     16, static_cast<std::uint8_t>(s_.started))}}};
  }

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool) override {
    if (aborted_) return mongo::failure(aborted());
    mongo::bulk_outcome out;
    if (coll == "denormd_leases") {
      EXPECT_EQ(bson::to_json(*requests.front().filter),
                R"({"_id":"shop.customers","owner":"me","epoch":7,)"
                R"("$expr":{"$gt":["$expiresAt","$$NOW"]}})");
      EXPECT_EQ(bson::to_json(*requests.front().pipeline), R"([{"$set":{"fencedAt":"$$NOW"}}])");
      lines_.push_back("fence");
      out.matched = s_.lease_held ? 1 : 0;
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
      ++out.matched;
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
    s_.committed.push_back(lines_);
    return {};
  }

 private:
  fake_store& s_;
  std::vector<std::string> lines_;
  bool aborted_ = false;
};

// Writes only in transactions: a write outside one would be unfenced.
class fake_client final : public finds_nothing<mongo::document_client> {
 public:
  fake_store store;

  mongo::result<std::unique_ptr<mongo::transaction>> start_transaction() override {
    ++store.started;
    return std::unique_ptr<mongo::transaction>(std::make_unique<fake_transaction>(store));
  }
  mongo::result<mongo::bulk_outcome> update_bulk(const std::string&, const std::string&,
                                                 std::span<const mongo::write_request>,
                                                 bool) override {
    ADD_FAILURE() << "an unfenced write";
    return mongo::bulk_outcome{};
  }
  mongo::status insert_one(const std::string&, const std::string&, const bson::document&) override {
    ADD_FAILURE() << "an unfenced insert";
    return {};
  }
  mongo::status find_each(const std::string&, const std::string&, const bson::document&,
                          const mongo::find_options&,
                          const std::function<bool(bson::document&&)>&) override {
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

  fenced_writer make(std::size_t max_ops = fenced_writer::default_max_ops) {
    return fenced_writer(client_, metrics_, writer_options{"meta", false},
                         lease_fence{"meta", "shop.customers", "me", 7, &sessions_}, max_ops);
  }

  // A single-document rename of the orders of customer `key`.
  std::vector<mapping::write_op> renames(int n) const {
    std::vector<mapping::write_op> ops;
    for (int key = 1; key <= n; ++key) {
      mapping::write_op op;
      op.source_mapping = &mappings_.front();
      op.target = mappings_.front().target;
      mapping::update_write w;
      w.filter = bson::document{{"customerId", key}};
      w.update = bson::document{{"$set", bson::document{{"customer.name", "n"}}}};
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
  lease::session_log sessions_;
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

TEST_F(fenced_writer_test, each_transactions_session_is_noted_for_the_heartbeat) {
  auto w = make(2);
  ASSERT_TRUE(w.apply(renames(5), tokens_, source_));
  ASSERT_EQ(client_.store.started, 3);
  const auto noted = sessions_.recent();
  ASSERT_EQ(noted.size(), 3u);
  EXPECT_EQ(noted.front().get("id")->as<bson::binary>().data[0], 3);  // the last first
}

TEST_F(fenced_writer_test, a_moved_lease_commits_nothing_and_is_not_transient) {
  client_.store.lease_held = false;
  auto w = make();
  auto st = w.apply(renames(2), tokens_, source_);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, mongo::lease_moved_code);
  EXPECT_EQ(st.error().metric_code(), "lease_moved");
  EXPECT_FALSE(st.error().transient());
  EXPECT_TRUE(client_.store.committed.empty());
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
  const lease_fence f{"meta", "u", "me", 3};
  mongo::bulk_outcome matched;
  matched.matched = 1;
  EXPECT_TRUE(fence_held(f, matched));
  EXPECT_EQ(fence_held(f, mongo::bulk_outcome{}).error().code, mongo::lease_moved_code);
  // A conflict with a takeover under way is transient: the retry's fence decides.
  const mongo::driver_error conflict{
      mongo::driver_error::origin::server, 112, "WriteConflict", {"TransientTransactionError"}};
  auto st = fence_held(f, mongo::result<mongo::bulk_outcome>(mongo::failure(conflict)));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, 112u);
  EXPECT_TRUE(st.error().transient());
}

}  // namespace
}  // namespace denormd::sink
