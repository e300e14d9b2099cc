#pragma once
// Applies planned writes to MongoDB. Ops of one mapping run in plan order as ordered bulk
// writes with w:"majority" (refills between them run in place); ops of different mappings
// touch disjoint paths and run as separate bulks. A statement the server rejects for good
// (document too large, validation) is counted, logged with its event's token and stored in
// `<db>.denormd_deadletters`, and the rest goes on; a multi-document statement is then
// retried one document at a time, so only the documents that fail are left out. Planned
// dead letters (references that cannot be followed) are stored the same way. Any other
// failure is returned: every op is idempotent, so the caller retries the whole batch.
// One writer per thread; not thread-safe.

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/write_op.h"
#include "metrics/metrics.h"
#include "mongo/document_client.h"
#include "sink/batch_writer.h"
#include "sink/target_turns.h"
#include "sink/write_tally.h"

namespace denormd::sink {

inline constexpr const char* deadletter_collection = "denormd_deadletters";

struct writer_options {
  std::string meta_db;   // where dead letters go
  bool dry_run = false;  // log the writes, send none
  // Hold the metrics of each apply() until tally().publish(): its writes are in a
  // transaction that has not committed yet.
  bool hold_metrics = false;
  // The fenced writers of one process take turns per target collection (target_turns.h); none
  // when null.
  std::shared_ptr<target_turns> turns{};
  // Observe denormd_fanout: the writes of change events (the daemon's), not of a backfill's or
  // a verify's ops, which carry no events of their own.
  bool observe_fanout = false;
};

// Streams the _ids of the documents `filter` selects in `target` to `each`, `page` at a time
// (`each` may write meanwhile: a document may then show twice); stops at the first failure of
// the read or of `each`.
mongo::status for_each_id_page(mongo::document_client& conn, const mapping::ns& target,
                               const bson::document& filter, std::size_t page,
                               const std::function<mongo::status(bson::array&&)>& each);

class writer final : public batch_writer {
 public:
  // `evaluate_on`: where computed fields are evaluated when `conn` is a transaction (an
  // evaluation the server refuses would abort it); `conn` when null.
  writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
         mongo::document_client* evaluate_on = nullptr);

  // `event_tokens[op.event]` is the resume token of the event each op came from.
  mongo::status apply(std::span<const mapping::write_op> ops,
                      std::span<const bson::document> event_tokens,
                      const mapping::ns& source) override;

  // The ops of the last apply() that left some document without its write (a dead letter),
  // in the order they failed; each at most once.
  const std::vector<const mapping::write_op*>& rejected() const { return rejected_; }
  // The statements of the last apply() the server refused for good (one document each).
  std::size_t refused_writes() const { return refused_writes_; }
  // The server refused a statement for good during the last apply(), whatever became of it
  // (in a transaction, the refusal aborted the transaction).
  bool saw_refusal() const { return saw_refusal_; }
  // Documents the update statements matched so far (what a transaction holds).
  std::uint64_t matched() const { return matched_; }
  // What the last apply() counted; held there with writer_options::hold_metrics.
  write_tally& tally() { return tally_; }

 private:
  // `origin` (optional) is the op the run was split from, for rejected().
  mongo::status run_bulk(std::span<const mapping::write_op* const> run,
                         std::span<const bson::document> event_tokens, const mapping::ns& source,
                         const mapping::write_op* origin = nullptr);
  // A multi-document op the server rejected: the same write once per matching document.
  mongo::status run_per_document(const mapping::write_op& op,
                                 std::span<const bson::document> event_tokens,
                                 const mapping::ns& source);
  // A fill, refill or recompute: its kind completes it through a store over this writer's
  // connection.
  mongo::status run_completion(const mapping::write_op& op,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source);
  // Consecutive such ops of one mapping: its kind completes them together.
  mongo::status run_completions(std::span<const mapping::write_op* const> ops,
                                std::span<const bson::document> event_tokens,
                                const mapping::ns& source);
  // Stores a dead letter for `op` (and notes it for rejected()): `error` is {code, message}
  // or {reason}; `filter` the statement's own filter when it is narrower than the op's;
  // `subject` the document and field it is about, when known.
  mongo::status dead_letter(const mapping::write_op& op, const bson::document* update,
                            bson::document error, const bson::document* token,
                            const mapping::ns& source, const bson::document* filter = nullptr,
                            const mapping::dead_letter_subject* subject = nullptr);
  mongo::status rejected_by_server(const mapping::write_op& op, const bson::document& update,
                                   const mongo::driver_error& error, const bson::document* token,
                                   const mapping::ns& source,
                                   const bson::document* filter = nullptr);
  void acknowledged(const mapping::write_op& op, std::int64_t now_ms);
  // denormd_fanout for `m`: the documents its ops in `ops` matched, spread evenly over the
  // distinct events they came from.
  void observe_fanout(const mapping::mapping& m, std::span<const mapping::write_op> ops,
                      std::uint64_t matched);

  class store;

  mongo::document_client& conn_;
  mongo::document_client& evaluate_on_;
  writer_options opts_;
  write_tally tally_;
  std::vector<const mapping::write_op*> rejected_;
  std::size_t refused_writes_ = 0;
  bool saw_refusal_ = false;
  std::uint64_t matched_ = 0;
};

}  // namespace denormd::sink
