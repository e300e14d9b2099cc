#pragma once
// collStats and $collStats: a collection's storage statistics as MongoDB 6.0's
// appendCollectionStorageStats builds them (src/mongo/db/stats/storage_stats.cpp), for stored
// collections and for the local database's (local_database). `size` is the documents' BSON
// size; the emulator keeps no files, so storageSize equals it and index sizes are estimates
// (index_bytes_per_document per document and index). Stateless; takes the storage's read lock.

#include <cstdint>
#include <string>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

class server_state;

inline constexpr std::int64_t index_bytes_per_document = 32;

// The collStats command's reply fields: {ns, size, count, ..., scaleFactor}. A missing
// collection gives zeros with ok: 1, as MongoDB 6.0 answers; `scale` as it validates it (2).
denormd::expected<bson::document> coll_stats(server_state& server, const std::string& db,
                                             const std::string& coll, const bson::document& body);

// What a $collStats stage outputs for `spec` ({storageStats: {scale}, count: {}}):
// {ns, host, localTime, storageStats?, count?}; 26 when the collection does not exist.
// latencyStats and queryExecStats are refused (238).
denormd::expected<bson::document> coll_stats_stage(server_state& server, const std::string& db,
                                                   const std::string& coll,
                                                   const bson::value& spec);

}  // namespace mongo_emulator
