#include "ops/commands/oplog_window.h"

namespace denormd::ops {

mongo::result<std::optional<bson::timestamp>> oldest_oplog_entry(mongo::document_client& conn) {
  mongo::find_options opts;
  opts.sort = bson::document{{"$natural", 1}};
  opts.projection = bson::document{{"ts", 1}};
  opts.limit = 1;
  auto docs = conn.find(oplog_db, oplog_collection, bson::document{}, opts);
  if (!docs) return docs.error();
  for (const auto& d : *docs) {
    if (const bson::value* ts = d.get("ts"); ts != nullptr && ts->is<bson::timestamp>())
      return std::optional<bson::timestamp>{ts->as<bson::timestamp>()};
  }
  return std::optional<bson::timestamp>{};
}

double headroom_seconds(bson::timestamp position, bson::timestamp oldest) {
  return static_cast<double>(static_cast<std::int64_t>(position.t) -
                             static_cast<std::int64_t>(oldest.t));
}

std::string oplog_read_problem(const mongo::driver_error& e) {
  std::string out = "cannot read the oldest entry of local.oplog.rs";
  if (e.from == mongo::driver_error::origin::server && e.code == 13) {
    out +=
        ": the user lacks the find privilege on local.oplog.rs (grant it with a role that has "
        "{resource: {db: \"local\", collection: \"oplog.rs\"}, actions: [\"find\"]}, or the "
        "read role on the local database)";
  }
  return out + " (" + e.to_string() + ")";
}

}  // namespace denormd::ops
