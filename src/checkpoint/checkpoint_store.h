#pragma once
// Where denormd keeps its place: one document per watched namespace in
// `<db>.denormd_checkpoints`, {_id: "shop.customers", token, wallTime, savedAt, leaseEpoch,
// writer, fenced, stoppedMappings} (the token itself carries the cluster time; stoppedMappings:
// where removed mappings stopped). Written with w:"majority" only after every write up to that
// point was acknowledged.
//
// The document is also the namespace's write fence (docs/architecture.md, "The write fence"):
// `leaseEpoch` is the epoch of the one writer allowed (a lease's with --ha; without, each
// pipeline start claims the next), `writer` the session that writer commits on and the process
// it belongs to, and every transaction of that writer ends with fence_statement(), which
// matches only while the epoch is still its own. Stateless apart from the connection;
// thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/position_store.h"
#include "mongo/document_client.h"

namespace denormd::checkpoint {

inline constexpr const char* collection_name = "denormd_checkpoints";

// The stored document's fields, as an upsert's update: a checkpoint that knows no event time
// (event_ms 0: the stream was idle since the start) leaves the stored wallTime as it is, so
// the last event's time is never overwritten with 1970. Pure.
bson::document save_update(const checkpoint& cp, std::int64_t now_ms);
// A stored document back as a checkpoint; nullopt when it holds no token (cleared). Pure.
std::optional<checkpoint> parse_checkpoint(const bson::document& doc);

// The session a namespace's writer commits on ({id: UUID}) and the process run it belongs to
// (unique per run): whoever fences that writer out ends the session instead of waiting for the
// server to abort a transaction it left open.
struct writer_session {
  bson::document lsid;
  std::string process;
};

// The statement that ends every fenced transaction of `source`'s writer at `epoch`: it matches
// the checkpoint document only while its epoch is `epoch`, and always changes it ($inc), so the
// server orders the transaction against whoever moves the epoch (a claim or a takeover's mark:
// the later of the two waits for the other, or fails with a write conflict). `filter` and
// `update` keep the request's documents. Pure.
mongo::write_request fence_statement(const mapping::ns& source, std::int64_t epoch,
                                     bson::document& filter, bson::document& update);

// The write fence as a checkpoint document records it: the epoch of the writer allowed, and that
// writer's process (empty when none is recorded).
struct fence_record {
  std::int64_t epoch = 0;
  std::string writer_process;
};

class checkpoint_store final : public position_store {
 public:
  checkpoint_store(mongo::document_client& conn, std::string db);

  mongo::result<std::optional<checkpoint>> load(const mapping::ns& source) override;
  mongo::status save(const mapping::ns& source, const checkpoint& cp) override;
  // Every stored checkpoint of `source`'s collection, whole or of any partition of any count
  // (docs/architecture.md, "Partitioned streams": a new layout takes over from the old one).
  mongo::result<std::vector<std::pair<mapping::ns, checkpoint>>> load_units(
      const mapping::ns& source);
  // Marks `source`'s checkpoint with lease `epoch` (creating the document if needed), so that a
  // save with an older epoch is refused from now on. Returns the epoch the checkpoint carries
  // afterwards: `epoch`, or a newer one already there (then nothing changed).
  // Bounded by `max_time` (a transaction the previous holder left open holds the document).
  mongo::result<std::int64_t> fence(const mapping::ns& source, std::int64_t epoch,
                                    std::chrono::milliseconds max_time);
  // Without a lease: `source`'s writer from now on is `mine`, at the next epoch, which is
  // returned. The session of the writer recorded before is ended first when it is another
  // process's (so a transaction it left open frees the document at once), then the epoch is
  // raised in one conditional write (tried again when another claim came between). Every
  // write and checkpoint of an earlier epoch is refused from then on.
  mongo::result<std::int64_t> claim(const mapping::ns& source, const writer_session& mine,
                                    std::chrono::milliseconds max_time);
  // Under a lease at `epoch`: records `mine` as `source`'s writer. False when the checkpoint
  // is held under another epoch by now (the lease moved).
  mongo::result<bool> publish_writer(const mapping::ns& source, std::int64_t epoch,
                                     const writer_session& mine);
  // `source`'s write fence; nullopt when it has none (never written, or written by a denormd
  // before the fence).
  mongo::result<std::optional<fence_record>> fence_of(const mapping::ns& source);
  // Ends the session of `source`'s recorded writer unless it is `my_process`'s: its holder is
  // being fenced out (a takeover of a lease it did not release). Returns the process whose
  // session was ended; nullopt when none is recorded (or it is this one).
  mongo::result<std::optional<std::string>> end_writer_of_other(const mapping::ns& source,
                                                                const std::string& my_process);
  // Adds `entry` to the stopped mappings of `source`'s stored checkpoint unless it has one for
  // that mapping already (an earlier stop wins), in one update that touches nothing else, so
  // that it needs no lease: the holder's own saves keep it. Nothing when no checkpoint is stored.
  mongo::status note_stopped(const mapping::ns& source, const stopped_mapping& entry);
  const std::string& db() const { return db_; }

 private:
  // One update of the first document `filter` matches; how many matched (0 or 1).
  mongo::result<std::int64_t> update_one(const bson::document& filter,
                                         const bson::document& update);
  // Upserts `update` unless a lease newer than `epoch` (0: none) marked the document.
  mongo::status upsert(const mapping::ns& source, std::int64_t epoch, const bson::document& update,
                       std::optional<std::chrono::milliseconds> max_time = std::nullopt);

  mongo::document_client& conn_;
  std::string db_;
};

}  // namespace denormd::checkpoint
