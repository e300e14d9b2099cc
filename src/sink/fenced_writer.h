#pragma once
// Writes a namespace's batches only while its writer holds the namespace's write fence, judged
// by the server when the writes commit, not before they are sent (docs/architecture.md, "The
// write fence"). open() takes the fence: under a lease (--ha) at the lease's epoch, without
// one by claiming the next epoch; either way it publishes the session its transactions commit
// on. Each transaction holds up to `max_ops` of the batch's ops and, last before the commit,
// checkpoint::fence_statement(): it matches the namespace's checkpoint document only while the
// epoch is still this writer's, and writes it. Whoever moves the epoch (a takeover, a restarted
// process's claim) writes the same document, so the server orders the two: the move comes
// first and the transaction commits nothing, or the commit comes first and every write of the
// new writer after it. Nothing else writes that document meanwhile (a lease's renewals write
// the lease table), so the writer never conflicts with itself.
//
// A transaction that fails with a write conflict (with an application writing the same
// documents, say) is tried again in place, then in halves, so that a batch makes progress a
// transaction at a time; committed() says how much of a failed batch is written. A statement the
// server refuses for good aborts its transaction; its ops are then written again one write call per
// fenced transaction, so the refused one alone becomes a dead letter. A transaction also holds at
// most `max_documents` documents of multi-document updates, without a read first: it holds as many
// ops as fit in half that at the largest recent fan-out, and one whose updates matched more is
// aborted before its commit and written again in halves; one update that alone fans out to more
// is split into fenced transactions of that many documents each (narrowed to their _ids). (A count
// read first, an $or of every update's filter, cost the server more than the writes.) One writer
// per thread; not thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "mongo/document_client.h"
#include "sink/writer.h"

namespace denormd::sink {

// Whose fence a writer's transactions end with: the checkpoint document of `source` in `db`,
// and this process run (unique per run), recorded with the session.
struct write_fence {
  std::string db;
  mapping::ns source;
  std::string process;
};

// What the fence statement's outcome means: held, or moved (a failure coded lease_moved_code,
// never transient: the next attempt's fence finds the same), or the statement failed.
mongo::status fence_held(const write_fence& fence, std::int64_t epoch,
                         const mongo::result<mongo::bulk_outcome>& outcome);

class fenced_writer final : public batch_writer {
 public:
  // Ops per transaction, and documents a transaction's multi-document updates may write: a
  // transaction this large stays well inside MongoDB's transaction limits
  // (transactionLifetimeLimitSeconds, cache pressure, oplog entries). 100 ops cost two more
  // commands (the fence, the commit) per 100 ops; larger transactions hold their documents
  // longer and made the test server's per-statement work grow with the transaction (500 ops
  // tipped copy events at 5,000/s into a queue: docs/performance.md, "Comparing revisions").
  static constexpr std::size_t default_max_ops = 100;
  static constexpr std::size_t default_max_documents = 1000;
  // Tries of one transaction that fails with a write conflict, in place, before it is halved.
  static constexpr int tries_in_place = 3;
  // How long taking the fence may wait for the checkpoint document (held by a transaction the
  // previous writer left open, when its session could not be ended).
  static constexpr std::chrono::milliseconds claim_time{5000};

  fenced_writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
                write_fence fence, std::size_t max_ops = default_max_ops,
                std::size_t max_documents = default_max_documents);

  mongo::result<std::int64_t> open(std::int64_t epoch) override;
  mongo::status apply(std::span<const mapping::write_op> ops,
                      std::span<const bson::document> event_tokens,
                      const mapping::ns& source) override;
  std::size_t committed() const override { return committed_; }

 private:
  // `ops` (within the limits) in fenced transactions: tried in place, then in halves; each
  // committed transaction adds its ops to `progress` when given.
  mongo::status write_range(std::span<const mapping::write_op> ops,
                            std::span<const bson::document> event_tokens, const mapping::ns& source,
                            std::size_t* progress);
  // `ops` in one fenced transaction; a statement refused in it makes each write call a fenced
  // transaction of its own instead.
  mongo::status write_chunk(std::span<const mapping::write_op> ops,
                            std::span<const bson::document> event_tokens,
                            const mapping::ns& source);
  // How many ops a transaction takes: max_ops_, or fewer when recent updates fanned out.
  std::size_t ops_per_transaction() const;
  // `ops` in fenced transactions within max_documents_: the whole, else (over the limit) the
  // rest in halves, an op of more than that alone written in pages.
  mongo::status write_bounded(std::span<const mapping::write_op> ops,
                              std::span<const bson::document> event_tokens,
                              const mapping::ns& source);
  // A multi-document update of more than max_documents_ documents: written a page of
  // max_documents_ of them at a time, each page its own fenced transaction.
  mongo::status write_in_pages(const mapping::write_op& op,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source);
  // Whether `op` is a multi-document update, of a mapping that has fanned out past
  // max_documents_ before, that matches more than max_documents_ documents now.
  mongo::result<bool> known_large(const mapping::write_op& op);
  // `ops` in one fenced transaction, committed if everything in it was acknowledged.
  mongo::status in_one_transaction(std::span<const mapping::write_op> ops,
                                   std::span<const bson::document> event_tokens,
                                   const mapping::ns& source, bool& refused);
  // Notes what a transaction of `ops` matched.
  void learn(std::span<const mapping::write_op> ops, std::uint64_t matched);
  // `ops` with each write call in a fenced transaction of its own.
  mongo::status write_by_write(std::span<const mapping::write_op> ops,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source);

  class per_write_client;

  mongo::document_client& conn_;
  metrics::metrics& metrics_;
  const writer_options opts_;
  const write_fence fence_;
  const std::size_t max_ops_;
  const std::size_t max_documents_;
  std::unique_ptr<mongo::session> session_;  // from open(); every transaction runs on it
  std::int64_t epoch_ = 0;
  std::size_t committed_ = 0;
  // Documents a multi-document update matched, the largest recently (0: none seen yet).
  double docs_per_op_ = 0;
  // While a bounded transaction is written: the most documents it may match.
  std::size_t bound_ = 0;
  // Mappings one of whose updates matched more than max_documents_ (bounded: mapping names).
  static constexpr std::size_t max_far_reaching = 1024;
  std::set<std::string> far_reaching_;
  // While one update is written in pages: the documents its committed pages matched, so that
  // denormd_fanout sees the one event once, with all of them.
  std::optional<std::uint64_t> paged_matched_;
};

}  // namespace denormd::sink
