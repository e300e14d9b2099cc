#pragma once
// How far back the server's history reaches: the oldest entry it still keeps in its oplog,
// read as rs.printReplicationInfo() reads it (find on local.oplog.rs, sort {$natural: 1},
// limit 1, the entry's `ts`), and the headroom a stored position has before that entry passes
// it. The read needs the `find` privilege on local.oplog.rs. The computations are pure.

#include <optional>
#include <string>

#include "bson/value.h"
#include "mongo/document_client.h"

namespace denormd::ops {

inline constexpr const char* oplog_db = "local";
inline constexpr const char* oplog_collection = "oplog.rs";

// The `ts` of the oldest oplog entry; nullopt when there is none (an empty oplog, or a
// server without one: a standalone mongod).
mongo::result<std::optional<bson::timestamp>> oldest_oplog_entry(mongo::document_client& conn);

// Seconds from the oldest kept entry to `position` (both cluster times, whose `t` is seconds):
// how long until a restart resuming at `position` would find its history gone. 0 or less
// when the oldest kept entry is at or past it already.
double headroom_seconds(bson::timestamp position, bson::timestamp oldest);

// What an operator reads when the oplog cannot be read: for code 13 (Unauthorized), the
// privilege to grant; otherwise the server's answer.
std::string oplog_read_problem(const mongo::driver_error& e);

}  // namespace denormd::ops
