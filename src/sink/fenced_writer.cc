#include "sink/fenced_writer.h"

#include <algorithm>

#include "common/log.h"
#include "lease/lease_store.h"

namespace denormd::sink {

mongo::write_request fence_statement(const lease_fence& fence, bson::document& filter,
                                     bson::array& pipeline) {
  // Expired is judged by the server's clock, as the lease table's every expiry is.
  filter = bson::document{{"_id", fence.unit},
                          {"owner", fence.owner},
                          {"epoch", fence.epoch},
                          {"$expr", bson::document{{"$gt", bson::array{"$expiresAt", "$$NOW"}}}}};
  pipeline = bson::array{bson::document{{"$set", bson::document{{"fencedAt", "$$NOW"}}}}};
  static const bson::document none;
  mongo::write_request r;
  r.filter = &filter;
  r.update = &none;
  r.pipeline = &pipeline;
  return r;
}

mongo::status fence_held(const lease_fence& fence,
                         const mongo::result<mongo::bulk_outcome>& outcome) {
  // A write conflict on the row (a takeover under way) fails the statement: transient, and
  // the retry's fence finds the lease moved or still ours.
  if (!outcome) return mongo::failure(outcome.error());
  if (outcome->write_error) return mongo::failure(*outcome->write_error);
  if (outcome->matched == 1) return {};
  return mongo::failure(mongo::driver_error{
      mongo::driver_error::origin::client,
      mongo::lease_moved_code,
      "the lease of " + fence.unit + " at epoch " + std::to_string(fence.epoch) +
          " is no longer this instance's, or has expired by the server's clock; the batch is "
          "not written",
      {}});
}

namespace {

// A transaction whose session is noted first: if this instance is killed or paused inside it,
// the instance taking its leases over can end it (lease::session_log).
mongo::result<std::unique_ptr<mongo::transaction>> begin_transaction(mongo::document_client& conn,
                                                                     const lease_fence& fence) {
  auto txn = conn.start_transaction();
  if (txn && fence.sessions != nullptr) fence.sessions->note((*txn)->session_id());
  return txn;
}

// The fence as the last statement of `txn`, then the commit. Last, not first: a holder paused
// inside a transaction then has not written the lease row, so a takeover does not wait for it
// (the paused transaction conflicts with it, or finds the row moved, when it resumes).
mongo::status fence_and_commit(mongo::transaction& txn, const lease_fence& fence) {
  bson::document filter;
  bson::array pipeline;
  const mongo::write_request r = fence_statement(fence, filter, pipeline);
  auto held = fence_held(
      fence, txn.update_bulk(fence.db, lease::leases_collection, std::span(&r, 1), true));
  if (!held) return held;
  return txn.commit();
}

}  // namespace

// Every write call its own fenced transaction; reads see what is committed (every earlier
// write call is). So a statement refused for good aborts only its own call's transaction.
class fenced_writer::per_write_client final : public mongo::document_client {
 public:
  per_write_client(mongo::document_client& conn, const lease_fence& fence)
      : conn_(conn), fence_(fence) {}

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
    auto txn = begin_transaction(conn_, fence_);
    if (!txn) return txn.error();
    if (auto st = (*txn)->insert_one(db, coll, doc); !st) return st;
    return fence_and_commit(**txn, fence_);
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
    auto txn = begin_transaction(conn_, fence_);
    if (!txn) return txn.error();
    auto out = (*txn)->update_bulk(db, coll, requests, ordered);
    if (!out || out->write_error) return out;
    if (auto st = fence_and_commit(**txn, fence_); !st) return st.error();
    return out;
  }

  mongo::document_client& conn_;
  const lease_fence& fence_;
};

fenced_writer::fenced_writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
                             lease_fence fence, std::size_t max_ops, std::size_t max_documents)
    : conn_(conn),
      metrics_(m),
      opts_(std::move(opts)),
      fence_(std::move(fence)),
      max_ops_(std::max<std::size_t>(1, max_ops)),
      max_documents_(std::max<std::size_t>(1, max_documents)) {}

mongo::status fenced_writer::apply(std::span<const mapping::write_op> ops,
                                   std::span<const bson::document> event_tokens,
                                   const mapping::ns& source) {
  // Each transaction commits under the lease or not at all; a batch cut short by a takeover is
  // replayed whole by the new owner from the checkpoint before it (every op is idempotent).
  // Ops keep plan order: a transaction ends before an op that would take it past its limits.
  std::size_t start = 0;
  std::size_t documents = 0;
  auto flush = [&](std::size_t end) -> mongo::status {
    auto st = end > start ? write_chunk(ops.subspan(start, end - start), event_tokens, source)
                          : mongo::status{};
    start = end;
    documents = 0;
    return st;
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i - start == max_ops_) {
      if (auto st = flush(i); !st) return st;
    }
    auto n = documents_of(ops[i]);
    if (!n) return n.error();
    if (*n > max_documents_) {
      if (auto st = flush(i); !st) return st;
      if (auto st = write_in_pages(ops[i], event_tokens, source); !st) return st;
      start = i + 1;
      continue;
    }
    if (documents + *n > max_documents_) {
      if (auto st = flush(i); !st) return st;
    }
    documents += *n;
  }
  return flush(ops.size());
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
            {{"source", source.full()}});
  return write_by_write(ops, event_tokens, source);
}

mongo::result<std::size_t> fenced_writer::documents_of(const mapping::write_op& op) {
  const auto* w = op.as<mapping::update_write>();
  if (w == nullptr || !w->many) return std::size_t{1};
  // Read outside the transaction, so a long one is not made longer; the count only decides
  // how the writes are cut, so one that changes meanwhile changes no outcome.
  mongo::find_options ids_only;
  ids_only.projection = bson::document{{"_id", 1}};
  ids_only.limit = static_cast<std::int64_t>(max_documents_ + 1);
  auto found = conn_.find(op.target.db, op.target.coll, w->filter, ids_only);
  if (!found) return found.error();
  return found->size();
}

mongo::status fenced_writer::write_in_pages(const mapping::write_op& op,
                                            std::span<const bson::document> event_tokens,
                                            const mapping::ns& source) {
  const auto& w = std::get<mapping::update_write>(op.what);
  log::info("writer", "a multi-document update is written in fenced transactions of a page each",
            {{"mapping", op.source_mapping->name},
             {"source", source.full()},
             {"documents per page", static_cast<std::int64_t>(max_documents_)}});
  // The matching documents are streamed, and each page of them written as the same statement
  // narrowed to their _ids (never an array nor a regular expression, so $in matches each
  // literally). Writing while reading may show a document twice, which only repeats an
  // idempotent write; one that comes to match meanwhile is as an updateMany outside a
  // transaction may find it or not (a fill, or the next event, writes it).
  return for_each_id_page(conn_, op.target, w.filter, max_documents_, [&](bson::array&& ids) {
    mapping::write_op page = op;
    std::get<mapping::update_write>(page.what).filter = mapping::with_filter(
        bson::document{{"_id", bson::document{{"$in", std::move(ids)}}}}, w.filter);
    // A transient failure (112: a conflict with this instance's own renewal of the lease row,
    // every TTL/3, or with a takeover) is retried here a few times, the fence deciding again
    // each time: a retry of the whole batch would begin again from the first page for every
    // conflict one of many pages meets.
    constexpr int attempts = 5;
    for (int attempt = 1;; ++attempt) {
      auto st = write_chunk(std::span(&page, 1), event_tokens, source);
      if (st || !st.error().transient() || attempt == attempts) return st;
    }
  });
}

mongo::status fenced_writer::in_one_transaction(std::span<const mapping::write_op> ops,
                                                std::span<const bson::document> event_tokens,
                                                const mapping::ns& source, bool& refused) {
  auto txn = begin_transaction(conn_, fence_);
  if (!txn) return txn.error();
  // Counted once committed: an aborted transaction wrote nothing (and its ops are written
  // again, and counted, by the retry or write_by_write).
  writer_options held = opts_;
  held.hold_metrics = true;
  writer w(**txn, metrics_, held, &conn_);
  auto st = w.apply(ops, event_tokens, source);
  // The server aborted the transaction at the refusal: nothing of it may be committed.
  refused = w.saw_refusal();
  if (refused || !st) return st;
  st = fence_and_commit(**txn, fence_);
  if (st) w.tally().publish();
  return st;
}

mongo::status fenced_writer::write_by_write(std::span<const mapping::write_op> ops,
                                            std::span<const bson::document> event_tokens,
                                            const mapping::ns& source) {
  per_write_client each(conn_, fence_);
  writer w(each, metrics_, opts_);
  return w.apply(ops, event_tokens, source);
}

}  // namespace denormd::sink
