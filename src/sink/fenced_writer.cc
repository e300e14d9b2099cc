#include "sink/fenced_writer.h"

#include <algorithm>
#include <random>
#include <thread>

#include "checkpoint/checkpoint_store.h"
#include "common/log.h"

namespace denormd::sink {

mongo::status fence_held(const write_fence& fence, std::int64_t epoch,
                         const mongo::result<mongo::bulk_outcome>& outcome) {
  // A write conflict on the document (a takeover or a claim under way) fails the statement:
  // transient, and the retry's fence finds the epoch moved or still ours.
  if (!outcome) return mongo::failure(outcome.error());
  if (outcome->write_error) return mongo::failure(*outcome->write_error);
  if (outcome->matched == 1) return {};
  return mongo::failure(
      mongo::driver_error{mongo::driver_error::origin::client,
                          mongo::lease_moved_code,
                          "the write fence of " + fence.source.unit() + " has moved past epoch " +
                              std::to_string(epoch) +
                              " (another writer took the namespace over); the batch is not written",
                          {}});
}

namespace {

// The fence as the last statement of `txn`, then the commit. Last, not first: a writer paused
// inside a transaction then has not written the checkpoint document yet, so whoever takes over
// does not wait for it (the paused transaction conflicts, or finds the epoch moved, when it
// resumes).
mongo::status fence_and_commit(mongo::transaction& txn, const write_fence& fence,
                               std::int64_t epoch) {
  bson::document filter;
  bson::document update;
  const mongo::write_request r = checkpoint::fence_statement(fence.source, epoch, filter, update);
  auto held = fence_held(
      fence, epoch, txn.update_bulk(fence.db, checkpoint::collection_name, std::span(&r, 1), true));
  if (!held) return held;
  return txn.commit();
}

// The turns of the collections `ops` write (none without turns).
target_turns::held turns_for(const std::shared_ptr<target_turns>& turns,
                             std::span<const mapping::write_op> ops) {
  if (!turns) return {};
  std::vector<std::string> targets;
  for (const auto& op : ops)
    targets.push_back(op.target.full());
  return turns->take(std::move(targets));
}

// A transaction's updates matched more documents than one may hold.
constexpr std::uint32_t over_limit_code = 900101;

// Or more than the server's cache could hold for one transaction (MongoDB 6.0+:
// TransactionTooLargeForCache, which a retry of the same transaction meets again).
bool over_limit(const mongo::driver_error& e) {
  constexpr std::uint32_t too_large_for_cache = 10334;
  return (e.from == mongo::driver_error::origin::client && e.code == over_limit_code) ||
         (e.from == mongo::driver_error::origin::server && e.code == too_large_for_cache);
}

std::size_t multi_document_updates(std::span<const mapping::write_op> ops) {
  return static_cast<std::size_t>(std::count_if(ops.begin(), ops.end(), [](const auto& op) {
    const auto* w = op.template as<mapping::update_write>();
    return w != nullptr && w->many;
  }));
}

bool is_write_conflict(const mongo::driver_error& e) {
  constexpr std::uint32_t write_conflict = 112;
  return e.from == mongo::driver_error::origin::server && e.code == write_conflict;
}

// A short, jittered pause before a transaction is tried again, so that two writers that
// conflicted do not meet again in step.
void pause_before_retry(int attempt) {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  const int ms = 5 * attempt + static_cast<int>(rng() % 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

// Every write call its own fenced transaction; reads see what is committed (every earlier
// write call is). So a statement refused for good aborts only its own call's transaction.
class fenced_writer::per_write_client final : public mongo::document_client {
 public:
  per_write_client(mongo::document_client& conn, mongo::session& session, const write_fence& fence,
                   std::int64_t epoch, std::shared_ptr<target_turns> turns)
      : conn_(conn), session_(session), fence_(fence), epoch_(epoch), turns_(std::move(turns)) {}

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool ordered) override {
    auto out = fenced_bulk(db, coll, requests, ordered);
    if (!out || !out->write_error || !out->failed_index || *out->failed_index == 0) return out;
    // The refusal aborted the statements before it too: they are written again on their own.
    auto before = fenced_bulk(db, coll, requests.first(*out->failed_index), ordered);
    if (!before || before->write_error) return before;
    out->matched = before->matched;
    out->modified = before->modified;
    out->upserted = before->upserted;
    return out;
  }
  mongo::status insert_one(const std::string& db, const std::string& coll,
                           const bson::document& doc) override {
    const auto turn = take_turn(db, coll);
    auto txn = session_.start_transaction();
    if (!txn) return txn.error();
    if (auto st = (*txn)->insert_one(db, coll, doc); !st) return st;
    return fence_and_commit(**txn, fence_, epoch_);
  }
  mongo::status find_each(const std::string& db, const std::string& coll,
                          const bson::document& filter, const mongo::find_options& opts,
                          const std::function<bool(bson::document&&)>& each) override {
    return conn_.find_each(db, coll, filter, opts, each);
  }
  mongo::result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                                  const bson::document& filter,
                                                  const mongo::find_options& opts) override {
    return conn_.find(db, coll, filter, opts);
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string& db,
                                                        const std::string& coll,
                                                        const bson::document& filter) override {
    return conn_.find_one(db, coll, filter);
  }
  mongo::result<std::vector<bson::document>> aggregate(const std::string& db,
                                                       const std::string& coll,
                                                       const bson::array& pipeline) override {
    return conn_.aggregate(db, coll, pipeline);
  }
  mongo::result<snapshot_results> aggregate_snapshot(const std::string& db, const std::string& coll,
                                                     const bson::array& pipeline) override {
    return conn_.aggregate_snapshot(db, coll, pipeline);
  }

 private:
  // A refused statement is an outcome (its transaction is aborted, nothing of it lands).
  mongo::result<mongo::bulk_outcome> fenced_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool ordered) {
    const auto turn = take_turn(db, coll);
    auto txn = session_.start_transaction();
    if (!txn) return txn.error();
    auto out = (*txn)->update_bulk(db, coll, requests, ordered);
    if (!out || out->write_error) return out;
    if (auto st = fence_and_commit(**txn, fence_, epoch_); !st) return st.error();
    return out;
  }

  target_turns::held take_turn(const std::string& db, const std::string& coll) {
    if (!turns_) return {};
    return turns_->take({db + "." + coll});
  }

  mongo::document_client& conn_;
  mongo::session& session_;
  const write_fence& fence_;
  const std::int64_t epoch_;
  const std::shared_ptr<target_turns> turns_;
};

fenced_writer::fenced_writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
                             write_fence fence, std::size_t max_ops, std::size_t max_documents)
    : conn_(conn),
      metrics_(m),
      opts_(std::move(opts)),
      fence_(std::move(fence)),
      max_ops_(std::max<std::size_t>(1, max_ops)),
      max_documents_(std::max<std::size_t>(1, max_documents)) {}

mongo::result<std::int64_t> fenced_writer::open(std::int64_t epoch) {
  if (!session_) {
    auto s = conn_.start_session();
    if (!s) return s.error();
    session_ = std::move(s).value();
  }
  checkpoint::checkpoint_store store(conn_, fence_.db);
  const checkpoint::writer_session mine{session_->id(), fence_.process};
  if (epoch == 0) {
    auto claimed = store.claim(fence_.source, mine, claim_time);
    if (!claimed) return claimed.error();
    epoch_ = *claimed;
    return epoch_;
  }
  auto published = store.publish_writer(fence_.source, epoch, mine);
  if (!published) return published.error();
  epoch_ = epoch;
  if (!*published) return fence_held(fence_, epoch, mongo::bulk_outcome{}).error();
  return epoch_;
}

mongo::status fenced_writer::apply(std::span<const mapping::write_op> ops,
                                   std::span<const bson::document> event_tokens,
                                   const mapping::ns& source) {
  committed_ = 0;
  if (ops.empty()) return {};
  if (!session_) {
    return mongo::failure(mongo::driver_error{
        mongo::driver_error::origin::client,
        mongo::lease_moved_code,
        "the writer of " + fence_.source.unit() + " has not taken the write fence (open)",
        {}});
  }
  // Each transaction commits under the fence or not at all; ops keep plan order, and a batch
  // cut short is retried after its committed ops (every op is idempotent).
  for (std::size_t start = 0; start < ops.size();) {
    std::size_t take = std::min(ops_per_transaction(), ops.size() - start);
    // An update of a mapping known to fan out far is asked first how far this one does; one
    // over the limit is written in pages at once, never tried whole.
    std::size_t large = take;
    for (std::size_t i = 0; i < take; ++i) {
      auto is_large = known_large(ops[start + i]);
      if (!is_large) return is_large.error();
      if (*is_large) {
        large = i;
        break;
      }
    }
    if (large > 0) {
      const auto chunk = ops.subspan(start, large);
      if (auto st = write_bounded(chunk, event_tokens, source); !st) return st;
      start += chunk.size();
      continue;
    }
    if (auto st = write_in_pages(ops[start], event_tokens, source); !st) return st;
    ++committed_;
    ++start;
  }
  return {};
}

mongo::result<bool> fenced_writer::known_large(const mapping::write_op& op) {
  const auto* w = op.as<mapping::update_write>();
  if (w == nullptr || !w->many || op.source_mapping == nullptr ||
      !far_reaching_.contains(op.source_mapping->name)) {
    return false;
  }
  // The _ids of one more document than a transaction may hold: a bounded read, not a count.
  mongo::find_options probe;
  probe.projection = bson::document{{"_id", 1}};
  probe.limit = static_cast<std::int64_t>(max_documents_) + 1;
  probe.batch_size = static_cast<std::int32_t>(std::min<std::size_t>(max_documents_ + 1, 100000));
  std::size_t seen = 0;
  auto st = conn_.find_each(op.target.db, op.target.coll, w->filter, probe,
                            [&](bson::document&&) { return ++seen <= max_documents_; });
  if (!st) return st.error();
  return seen > max_documents_;
}

std::size_t fenced_writer::ops_per_transaction() const {
  if (docs_per_op_ <= 1) return max_ops_;
  // Half the limit at the largest recent fan-out: a transaction over the limit is rare.
  const auto fit =
      static_cast<std::size_t>(static_cast<double>(max_documents_) / (2 * docs_per_op_));
  return std::clamp<std::size_t>(fit, 1, max_ops_);
}

mongo::status fenced_writer::write_bounded(std::span<const mapping::write_op> ops,
                                           std::span<const bson::document> event_tokens,
                                           const mapping::ns& source) {
  // Written without reading first: the transaction itself says how many documents its updates
  // matched, and one over the limit is aborted before its commit (in_one_transaction).
  const std::size_t before = committed_;
  bound_ = max_documents_;
  auto st = write_range(ops, event_tokens, source, &committed_);
  bound_ = 0;
  if (st || !over_limit(st.error())) return st;
  // Over the limit: the rest in halves, each bounded again; one op alone is written in pages.
  const auto rest = ops.subspan(committed_ - before);
  if (rest.size() == 1) {
    // Its mapping's next updates are asked first (known_large), so that one that fans out as
    // far is not written whole, only to be aborted, again.
    if (rest.front().source_mapping != nullptr && far_reaching_.size() < max_far_reaching) {
      far_reaching_.insert(rest.front().source_mapping->name);
    }
    if (auto paged = write_in_pages(rest.front(), event_tokens, source); !paged) return paged;
    ++committed_;
    return {};
  }
  const std::size_t half = rest.size() / 2;
  if (auto first = write_bounded(rest.first(half), event_tokens, source); !first) return first;
  return write_bounded(rest.subspan(half), event_tokens, source);
}

mongo::status fenced_writer::write_range(std::span<const mapping::write_op> ops,
                                         std::span<const bson::document> event_tokens,
                                         const mapping::ns& source, std::size_t* progress) {
  mongo::status st;
  for (int attempt = 1; attempt <= tries_in_place; ++attempt) {
    st = write_chunk(ops, event_tokens, source);
    if (st) {
      if (progress != nullptr) *progress += ops.size();
      return st;
    }
    // Only a write conflict is worth trying again here: another failure (the server away,
    // shutting down, the fence moved) goes back to the applier, which backs off and stops.
    if (!is_write_conflict(st.error())) return st;
    if (ops.size() == 1 && attempt == tries_in_place) return st;  // the applier counts it
    // Tried again here, so counted here (a failure returned is counted by the applier).
    metrics_.count_error("write", st.error().metric_code());
    if (attempt < tries_in_place) pause_before_retry(attempt);
  }
  // A transaction that keeps conflicting (with an application writing the same documents)
  // is smaller in halves: each half is shorter, touches less, and commits on its own.
  log::info("writer",
            "a transaction met a write conflict " + std::to_string(tries_in_place) +
                " times in a row; writing it in halves",
            {{"source", source.unit()},
             {"ops", static_cast<std::int64_t>(ops.size())},
             {"error", st.error().to_string()}});
  const std::size_t half = ops.size() / 2;
  if (auto first = write_range(ops.first(half), event_tokens, source, progress); !first)
    return first;
  return write_range(ops.subspan(half), event_tokens, source, progress);
}

mongo::status fenced_writer::write_chunk(std::span<const mapping::write_op> ops,
                                         std::span<const bson::document> event_tokens,
                                         const mapping::ns& source) {
  bool refused = false;
  auto st = in_one_transaction(ops, event_tokens, source, refused);
  if (!refused) return st;
  log::info("writer",
            "a statement was refused inside a fenced transaction; writing its ops one fenced "
            "write at a time",
            {{"source", source.unit()}});
  return write_by_write(ops, event_tokens, source);
}

void fenced_writer::learn(std::span<const mapping::write_op> ops, std::uint64_t matched) {
  const std::size_t many = multi_document_updates(ops);
  if (many == 0) return;
  const std::size_t single = ops.size() - many;
  const double per_update =
      static_cast<double>(matched > single ? matched - single : 0) / static_cast<double>(many);
  // The largest recent fan-out, forgotten slowly: one large update keeps the next
  // transactions small for a while.
  docs_per_op_ = std::max(per_update, docs_per_op_ * 0.9);
}

mongo::status fenced_writer::write_in_pages(const mapping::write_op& op,
                                            std::span<const bson::document> event_tokens,
                                            const mapping::ns& source) {
  const auto& w = std::get<mapping::update_write>(op.what);
  log::info("writer", "a multi-document update is written in fenced transactions of a page each",
            {{"mapping", op.source_mapping->name},
             {"source", source.unit()},
             {"documents per page", static_cast<std::int64_t>(max_documents_)}});
  // The matching documents are streamed, and each page of them written as the same statement
  // narrowed to their _ids (never an array nor a regular expression, so $in matches each
  // literally). Writing while reading may show a document twice, which only repeats an
  // idempotent write; one that comes to match meanwhile is as an updateMany outside a
  // transaction may find it or not (a fill, or the next event, writes it). A page that fails
  // with a write conflict is tried again in place, so that one conflict does not begin every page
  // again.
  paged_matched_ = 0;
  auto st = for_each_id_page(conn_, op.target, w.filter, max_documents_, [&](bson::array&& ids) {
    mapping::write_op page = op;
    std::get<mapping::update_write>(page.what).filter = mapping::with_filter(
        bson::document{{"_id", bson::document{{"$in", std::move(ids)}}}}, w.filter);
    return write_range(std::span(&page, 1), event_tokens, source, nullptr);
  });
  const std::uint64_t matched = *paged_matched_;
  paged_matched_.reset();
  // Every page has committed: the event's documents, once.
  if (st && opts_.observe_fanout)
    metrics_.observe_fanout(op.source_mapping->name, static_cast<double>(matched));
  return st;
}

mongo::status fenced_writer::in_one_transaction(std::span<const mapping::write_op> ops,
                                                std::span<const bson::document> event_tokens,
                                                const mapping::ns& source, bool& refused) {
  const auto turn = turns_for(opts_.turns, ops);
  auto txn = session_->start_transaction();
  if (!txn) return txn.error();
  // Counted once committed: an aborted transaction wrote nothing (and its ops are written
  // again, and counted, by the retry or write_by_write).
  writer_options held = opts_;
  held.hold_metrics = true;
  held.observe_fanout = opts_.observe_fanout && !paged_matched_;  // a page is not an event
  writer w(**txn, metrics_, held, &conn_);
  auto st = w.apply(ops, event_tokens, source);
  // The server aborted the transaction at the refusal: nothing of it may be committed.
  refused = w.saw_refusal();
  if (refused || !st) return st;
  // Over the limit: aborted (the transaction goes with its handle), to be cut; what it matched
  // sizes the next transactions.
  if (bound_ > 0 && w.matched() > bound_) {
    learn(ops, w.matched());
    return mongo::failure(mongo::driver_error{
        mongo::driver_error::origin::client,
        over_limit_code,
        "the transaction's updates matched " + std::to_string(w.matched()) +
            " documents, more than " + std::to_string(bound_) + "; aborted, to be cut",
        {}});
  }
  st = fence_and_commit(**txn, fence_, epoch_);
  if (!st) return st;
  w.tally().publish();
  if (paged_matched_) *paged_matched_ += w.matched();
  learn(ops, w.matched());
  return st;
}

mongo::status fenced_writer::write_by_write(std::span<const mapping::write_op> ops,
                                            std::span<const bson::document> event_tokens,
                                            const mapping::ns& source) {
  per_write_client each(conn_, *session_, fence_, epoch_, opts_.turns);
  writer w(each, metrics_, opts_);
  return w.apply(ops, event_tokens, source);
}

}  // namespace denormd::sink
