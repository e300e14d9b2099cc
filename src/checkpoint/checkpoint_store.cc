#include "checkpoint/checkpoint_store.h"

#include "common/clock.h"

namespace denormd::checkpoint {

bson::document save_update(const checkpoint& cp, std::int64_t now_ms) {
  bson::document set{{"token", cp.token},
                     {"savedAt", bson::date_time{cp.saved_ms != 0 ? cp.saved_ms : now_ms}}};
  if (cp.event_ms != 0) set.append("wallTime", bson::date_time{cp.event_ms});
  // Set or removed with every save, so that they always describe the token beside them.
  bson::document unset;
  if (cp.event_time)
    set.append("clusterTime", *cp.event_time);
  else
    unset.append("clusterTime", "");
  if (!cp.filter.empty())
    set.append("filter", cp.filter);
  else
    unset.append("filter", "");
  bson::document update{{"$set", std::move(set)}};
  if (!unset.empty()) update.append("$unset", std::move(unset));
  return update;
}

std::optional<checkpoint> parse_checkpoint(const bson::document& doc) {
  const bson::value* token = doc.get("token");
  if (token == nullptr || !token->is_document()) return std::nullopt;
  checkpoint cp;
  cp.token = token->as_document();
  if (const bson::value* w = doc.get("wallTime"); w != nullptr && w->is<bson::date_time>()) {
    cp.event_ms = w->as<bson::date_time>().millis;
  }
  if (const bson::value* s = doc.get("savedAt"); s != nullptr && s->is<bson::date_time>()) {
    cp.saved_ms = s->as<bson::date_time>().millis;
  }
  if (const bson::value* t = doc.get("clusterTime"); t != nullptr && t->is<bson::timestamp>())
    cp.event_time = t->as<bson::timestamp>();
  if (const bson::value* f = doc.get("filter"); f != nullptr && f->is_string())
    cp.filter = f->as_string();
  return cp;
}

checkpoint_store::checkpoint_store(mongo::document_client& conn, std::string db)
    : conn_(conn), db_(std::move(db)) {}

mongo::result<std::optional<checkpoint>> checkpoint_store::load(const mapping::ns& source) {
  auto doc = conn_.find_one(db_, collection_name, bson::document{{"_id", source.full()}});
  if (!doc) return doc.error();
  if (!*doc) return std::optional<checkpoint>{};
  return parse_checkpoint(**doc);
}

mongo::status checkpoint_store::save(const mapping::ns& source, const checkpoint& cp) {
  const std::int64_t now = wall_ms();
  const bson::document filter{{"_id", source.full()}};
  const bson::document update = save_update(cp, now);
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  r.upsert = true;
  auto out = conn_.update_bulk(db_, collection_name, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) return *out->write_error;
  return {};
}

}  // namespace denormd::checkpoint
