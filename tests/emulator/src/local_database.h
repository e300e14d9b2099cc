#pragma once
// The `local` database of this replica-set member, as far as the emulator has one:
// - `local.oplog.rs`: the kept change history as MongoDB's oplog documents (oplog_document), a
//   capped collection whose size in bytes follows one rule: every kept entry counts as
//   bytes_per_entry (1 KiB), so its maxSize is the history's bound (--oplog-max-events, or what
//   replSetResizeOplog set) times 1024 and a replSetResizeOplog `size` of S MB keeps S * 1024
//   entries;
// - `local.system.replset`: the replica set's configuration, the document replSetGetConfig
//   returns (set name and host as hello announces them).
// Served to find, count, aggregate, listCollections and collStats; nothing writes them.
// Lifecycle: one per server (server_state); the collections' UUIDs and the set's replicaSetId
// are fixed at construction. Thread-safe (immutable; callers hold a storage lock to read the
// history).

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "collection.h"
#include "query/matcher.h"

namespace mongo_emulator {

class server_state;

class local_database {
 public:
  static constexpr std::int64_t bytes_per_entry = 1024;

  local_database();

  // {_id: <set name>, version: 1, term: 1, members: [{_id: 0, host, ...}], protocolVersion,
  // writeConcernMajorityJournalDefault, settings} with MongoDB 6.0's field types.
  bson::document replset_config(server_state& server) const;
  // The documents of local.`coll` matching `m`, in natural order (newest first when `reverse`),
  // at most `wanted` of them (0: all): an oplog read builds only the entries it returns. nullopt
  // when `coll` is not one of the collections above. Under a storage lock.
  std::optional<std::vector<doc_ptr>> documents(server_state& server, std::string_view coll,
                                                const denormd::query::matcher& m, bool reverse,
                                                std::size_t wanted) const;
  // listCollections' entries for the collections above, in name order.
  std::vector<bson::document> collection_infos(server_state& server, bool name_only) const;
  // collStats' storage fields (size, count, capped, maxSize, indexes, ...) of local.`coll`,
  // sizes divided by `scale`; nullopt for other names. Under a storage lock.
  std::optional<bson::document> storage_stats(server_state& server, std::string_view coll,
                                              std::int64_t scale) const;

 private:
  bson::binary oplog_uuid_;
  bson::binary replset_uuid_;
  bson::oid replica_set_id_;
};

}  // namespace mongo_emulator
