#pragma once
// With --ha, writes a batch only while this instance still holds the source's lease, judged by
// the server when the writes commit, not before they are sent (docs/architecture.md, "High
// availability", "Fence"). Each transaction holds up to `max_ops` of the batch's ops and, last
// before the commit, an update of the lease row that matches only {owner: me, epoch, not
// expired by $$NOW} and sets `fencedAt`. A takeover writes the same row, so it either comes
// first (the fence matches nothing, or conflicts: the transaction is aborted, nothing of it
// lands) or after the commit (the new owner's writes come after ours). A statement the server
// refuses for good aborts its transaction; the ops of that transaction are then written again
// one write call per fenced transaction, so the refused one alone becomes a dead letter. A
// transaction also holds at most `max_documents` documents of multi-document updates; one
// update that fans out to more is split into fenced transactions of that many documents each
// (narrowed to their _ids), each page retried in place a few times on a transient failure.
// One writer per thread; not thread-safe.

#include <cstdint>
#include <span>
#include <string>

#include "lease/session_log.h"
#include "mongo/document_client.h"
#include "sink/writer.h"

namespace denormd::sink {

// Whose lease a write must still be under: `<db>.denormd_leases` {_id: unit, owner, epoch}.
struct lease_fence {
  std::string db;
  std::string unit;
  std::string owner;
  std::int64_t epoch = 0;
  // Where each transaction's session is noted, for the heartbeat to publish (none: not noted).
  lease::session_log* sessions = nullptr;
};

// The fence statement, and what its outcome means: held, or the lease has moved (a
// failure coded lease_moved_code, never transient), or the statement failed.
mongo::write_request fence_statement(const lease_fence& fence, bson::document& filter,
                                     bson::array& pipeline);
mongo::status fence_held(const lease_fence& fence,
                         const mongo::result<mongo::bulk_outcome>& outcome);

class fenced_writer final : public batch_writer {
 public:
  // Ops per transaction, and documents a transaction's multi-document updates may write: a
  // transaction this large stays well inside MongoDB's transaction limits
  // (transactionLifetimeLimitSeconds, cache pressure, oplog entries) and well under the lease
  // TTL/3 at which this instance's own renewals conflict with it.
  static constexpr std::size_t default_max_ops = 500;
  static constexpr std::size_t default_max_documents = 1000;

  fenced_writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
                lease_fence fence, std::size_t max_ops = default_max_ops,
                std::size_t max_documents = default_max_documents);

  mongo::status apply(std::span<const mapping::write_op> ops,
                      std::span<const bson::document> event_tokens,
                      const mapping::ns& source) override;

 private:
  // `ops` in one fenced transaction; a statement refused in it makes each write call a fenced
  // transaction of its own instead.
  mongo::status write_chunk(std::span<const mapping::write_op> ops,
                            std::span<const bson::document> event_tokens,
                            const mapping::ns& source);
  // The documents `op` writes, counted up to max_documents_ + 1 (a multi-document update is
  // read for them; any other op counts 1).
  mongo::result<std::size_t> documents_of(const mapping::write_op& op);
  // A multi-document update of more than max_documents_ documents: written a page of
  // max_documents_ of them at a time, each page its own fenced transaction (retried in place
  // a few times on a transient failure).
  mongo::status write_in_pages(const mapping::write_op& op,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source);
  // `ops` in one fenced transaction, committed if everything in it was acknowledged.
  mongo::status in_one_transaction(std::span<const mapping::write_op> ops,
                                   std::span<const bson::document> event_tokens,
                                   const mapping::ns& source, bool& refused);
  // `ops` with each write call in a fenced transaction of its own.
  mongo::status write_by_write(std::span<const mapping::write_op> ops,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source);

  class per_write_client;

  mongo::document_client& conn_;
  metrics::metrics& metrics_;
  const writer_options opts_;
  const lease_fence fence_;
  const std::size_t max_ops_;
  const std::size_t max_documents_;
};

}  // namespace denormd::sink
