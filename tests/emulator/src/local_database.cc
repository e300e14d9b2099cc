#include "local_database.h"

#include <limits>
#include <memory>
#include <random>

#include "bson_size.h"
#include "object_id.h"
#include "server_state.h"

namespace mongo_emulator {

namespace {

constexpr std::string_view oplog_name = "oplog.rs";
constexpr std::string_view replset_name = "system.replset";

bson::binary new_uuid() {
  std::mt19937_64 rng{std::random_device{}()};
  bson::binary b;
  b.subtype = 4;
  b.data.resize(16);
  for (auto& byte : b.data)
    byte = static_cast<std::uint8_t>(rng());
  b.data[6] = static_cast<std::uint8_t>((b.data[6] & 0x0F) | 0x40);  // version 4
  b.data[8] = static_cast<std::uint8_t>((b.data[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return b;
}

// appendIntOrLL / appendNumber(long long): an int32 when it fits.
bson::value int_or_long(std::int64_t n) {
  if (n >= std::numeric_limits<std::int32_t>::min() &&
      n <= std::numeric_limits<std::int32_t>::max())
    return bson::value(static_cast<std::int32_t>(n));
  return bson::value(n);
}

std::int64_t oplog_max_size(const oplog& log) {
  return static_cast<std::int64_t>(log.max_events()) * local_database::bytes_per_entry;
}

}  // namespace

local_database::local_database()
    : oplog_uuid_(new_uuid()),
      replset_uuid_(new_uuid()),
      replica_set_id_(denormd::test::new_object_id()) {}

bson::document local_database::replset_config(server_state& server) const {
  // member_config.idl and repl_set_config.idl: smallExactInt64 fields are int32, votes int32,
  // priority double, secondaryDelaySecs and protocolVersion int64.
  bson::document member;
  member.append("_id", std::int32_t{0});
  member.append("host", server.address());
  member.append("arbiterOnly", false);
  member.append("buildIndexes", true);
  member.append("hidden", false);
  member.append("priority", 1.0);
  member.append("tags", bson::document{});
  member.append("secondaryDelaySecs", std::int64_t{0});
  member.append("votes", std::int32_t{1});
  bson::document settings;
  settings.append("chainingAllowed", true);
  settings.append("heartbeatIntervalMillis", std::int32_t{2000});
  settings.append("heartbeatTimeoutSecs", std::int32_t{10});
  settings.append("electionTimeoutMillis", std::int32_t{10000});
  settings.append("catchUpTimeoutMillis", std::int32_t{-1});
  settings.append("catchUpTakeoverDelayMillis", std::int32_t{30000});
  settings.append("getLastErrorModes", bson::document{});
  settings.append("getLastErrorDefaults",
                  bson::document{{"w", std::int32_t{1}}, {"wtimeout", std::int32_t{0}}});
  settings.append("replicaSetId", replica_set_id_);
  bson::document config;
  config.append("_id", server.options().rs_name);
  config.append("version", std::int32_t{1});  // hello's setVersion
  config.append("term", std::int32_t{1});     // hello's electionId holds term 1
  config.append("members", bson::array{bson::value(std::move(member))});
  config.append("protocolVersion", std::int64_t{1});
  config.append("writeConcernMajorityJournalDefault", true);
  config.append("settings", std::move(settings));
  return config;
}

std::optional<std::vector<doc_ptr>> local_database::documents(server_state& server,
                                                              std::string_view coll,
                                                              const denormd::query::matcher& m,
                                                              bool reverse,
                                                              std::size_t wanted) const {
  std::vector<doc_ptr> out;
  if (coll == replset_name) {
    auto doc = std::make_shared<const bson::document>(replset_config(server));
    if (m.matches(*doc)) out.push_back(std::move(doc));
    return out;
  }
  if (coll != oplog_name) return std::nullopt;
  const oplog& log = server.store().history();
  for (std::size_t k = 0; k < log.size() && (wanted == 0 || out.size() < wanted); ++k) {
    auto doc = std::make_shared<const bson::document>(
        oplog_document(log.at(reverse ? log.size() - 1 - k : k)));
    if (m.matches(*doc)) out.push_back(std::move(doc));
  }
  return out;
}

std::vector<bson::document> local_database::collection_infos(server_state& server,
                                                             bool name_only) const {
  // As MongoDB's listCollections shows them: the oplog is capped, sized in bytes, and has no
  // _id index.
  bson::document oplog_info{{"name", oplog_name}, {"type", "collection"}};
  bson::document replset_info{{"name", replset_name}, {"type", "collection"}};
  if (!name_only) {
    oplog_info.append(
        "options", bson::document{{"capped", true},
                                  {"size", int_or_long(oplog_max_size(server.store().history()))},
                                  {"autoIndexId", false}});
    oplog_info.append("info", bson::document{{"readOnly", false}, {"uuid", oplog_uuid_}});
    replset_info.append("options", bson::document{});
    replset_info.append("info", bson::document{{"readOnly", false}, {"uuid", replset_uuid_}});
    replset_info.append("idIndex", bson::document{{"v", std::int32_t{2}},
                                                  {"key", bson::document{{"_id", std::int32_t{1}}}},
                                                  {"name", "_id_"}});
  }
  return {std::move(oplog_info), std::move(replset_info)};
}

std::optional<bson::document> local_database::storage_stats(server_state& server,
                                                            std::string_view coll,
                                                            std::int64_t scale) const {
  const bool oplog_ns = coll == oplog_name;
  if (!oplog_ns && coll != replset_name) return std::nullopt;
  std::int64_t count = 1;
  std::int64_t size = 0;
  if (oplog_ns) {
    count = static_cast<std::int64_t>(server.store().history().size());
    size = count * bytes_per_entry;
  } else {
    size = static_cast<std::int64_t>(bson_size(replset_config(server)));
  }
  const std::int64_t index_size = oplog_ns ? 0 : 4096;
  bson::document s;
  s.append("size", int_or_long(size / scale));
  s.append("count", int_or_long(count));
  if (count > 0) s.append("avgObjSize", static_cast<std::int32_t>(size / count));
  s.append("numOrphanDocs", std::int32_t{0});
  s.append("storageSize", int_or_long(size / scale));
  s.append("freeStorageSize", std::int32_t{0});
  s.append("capped", oplog_ns);
  if (oplog_ns) {  // WiredTigerRecordStore's capped fields: no document limit, the byte bound
    s.append("max", std::int32_t{-1});
    s.append("maxSize", int_or_long(oplog_max_size(server.store().history()) / scale));
    s.append("sleepCount", std::int32_t{0});
    s.append("sleepMS", std::int32_t{0});
  }
  s.append("nindexes", std::int32_t{oplog_ns ? 0 : 1});
  s.append("indexDetails", bson::document{});
  s.append("indexBuilds", bson::array{});
  s.append("totalIndexSize", int_or_long(index_size / scale));
  s.append("totalSize", int_or_long((size + index_size) / scale));
  bson::document index_sizes;
  if (!oplog_ns) index_sizes.append("_id_", int_or_long(index_size / scale));
  s.append("indexSizes", std::move(index_sizes));
  s.append("scaleFactor", int_or_long(scale));
  return s;
}

}  // namespace mongo_emulator
