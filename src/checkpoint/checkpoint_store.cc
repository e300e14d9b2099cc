#include "checkpoint/checkpoint_store.h"

#include <chrono>

namespace denormd::checkpoint {

checkpoint_store::checkpoint_store(mongo::connection& conn, std::string db)
    : conn_(conn), db_(std::move(db)) {}

mongo::result<std::optional<checkpoint>> checkpoint_store::load(const mapping::ns& source) {
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.full()}});
  if (!doc) return doc.error();
  if (!*doc) return std::optional<checkpoint>{};
  checkpoint cp;
  const bson::value* token = (*doc)->get("token");
  if (token == nullptr || !token->is_document()) return std::optional<checkpoint>{};
  cp.token = token->as_document();
  if (const bson::value* w = (*doc)->get("wallTime"); w != nullptr && w->is<bson::date_time>()) {
    cp.event_ms = w->as<bson::date_time>().millis;
  }
  if (const bson::value* s = (*doc)->get("savedAt"); s != nullptr && s->is<bson::date_time>()) {
    cp.saved_ms = s->as<bson::date_time>().millis;
  }
  return std::optional<checkpoint>(std::move(cp));
}

mongo::status checkpoint_store::save(const mapping::ns& source, const checkpoint& cp) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  bson::document doc{{"_id", source.full()},
                     {"token", cp.token},
                     {"wallTime", bson::date_time{cp.event_ms}},
                     {"savedAt", bson::date_time{cp.saved_ms != 0 ? cp.saved_ms : now}}};
  return conn_.replace_one(db_, collection_name, bson::document{{"_id", source.full()}}, doc, true);
}

mongo::status checkpoint_store::clear(const mapping::ns& source) {
  const bson::document filter{{"_id", source.full()}};
  const bson::document update{{"$unset", bson::document{{"token", ""}}}};
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  auto out = conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  return {};
}

}  // namespace denormd::checkpoint
