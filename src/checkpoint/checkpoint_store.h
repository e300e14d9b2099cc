#pragma once
// Where denormd keeps its place: one document per watched namespace in
// `<db>.denormd_checkpoints`, {_id: "shop.customers", token, wallTime, savedAt, leaseEpoch,
// stoppedMappings} (the token itself carries the cluster time; leaseEpoch only with --ha;
// stoppedMappings: where removed mappings stopped). Written with w:"majority" only
// after every write up to that point was acknowledged. Stateless apart from the connection;
// thread-safe.

#include <cstdint>
#include <optional>
#include <string>

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

class checkpoint_store final : public position_store {
 public:
  checkpoint_store(mongo::document_client& conn, std::string db);

  mongo::result<std::optional<checkpoint>> load(const mapping::ns& source) override;
  mongo::status save(const mapping::ns& source, const checkpoint& cp) override;
  // Marks `source`'s checkpoint with lease `epoch` (creating the document if needed), so that a
  // save with an older epoch is refused from now on. Returns the epoch the checkpoint carries
  // afterwards: `epoch`, or a newer one already there (then nothing changed).
  mongo::result<std::int64_t> fence(const mapping::ns& source, std::int64_t epoch);
  // Adds `entry` to the stopped mappings of `source`'s stored checkpoint unless it has one for
  // that mapping already (an earlier stop wins), in one update that touches nothing else, so
  // that it needs no lease: the holder's own saves keep it. Nothing when no checkpoint is stored.
  mongo::status note_stopped(const mapping::ns& source, const stopped_mapping& entry);
  const std::string& db() const { return db_; }

 private:
  // Upserts `update` unless a lease newer than `epoch` (0: none) marked the document.
  mongo::status upsert(const mapping::ns& source, std::int64_t epoch, const bson::document& update);

  mongo::document_client& conn_;
  std::string db_;
};

}  // namespace denormd::checkpoint
