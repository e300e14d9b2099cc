#include "mapping/change_event.h"

#include <algorithm>

#include "query/matcher.h"

namespace denormd::mapping {

namespace {

operation operation_from(std::string_view name) {
  static constexpr std::pair<std::string_view, operation> names[] = {
      {"insert", operation::insert},
      {"update", operation::update},
      {"replace", operation::replace},
      {"delete", operation::delete_},
      {"drop", operation::drop},
      {"rename", operation::rename},
      {"dropDatabase", operation::drop_database},
      {"invalidate", operation::invalidate}};
  for (const auto& [n, op] : names) {
    if (n == name) return op;
  }
  return operation::other;
}

// Moves a sub-document out of `doc`; nullopt when absent or null.
expected<std::optional<bson::document>> take_document(bson::document& doc, std::string_view key) {
  bson::value* v = doc.get(key);
  if (v == nullptr || v->is_null()) return std::optional<bson::document>{};
  if (!v->is_document()) return fail(std::string(key) + " must be a document");
  return std::optional<bson::document>(std::move(v->as_document()));
}

}  // namespace

expected<change_event> change_event::parse(bson::document raw) {
  change_event ev;
  const bson::value* type = raw.get("operationType");
  if (type == nullptr || !type->is_string())
    return fail("change event has no operationType string");
  ev.op_name = type->as_string();
  ev.op = operation_from(ev.op_name);

  if (bson::value* id = raw.get("_id"); id != nullptr && id->is_document()) {
    ev.token = std::move(id->as_document());
  } else {
    return fail("change event has no _id (resume token) document");
  }
  if (const bson::value* ct = raw.get("clusterTime"); ct != nullptr && ct->is<bson::timestamp>()) {
    ev.cluster_time = ct->as<bson::timestamp>();
  }
  if (const bson::value* wt = raw.get("wallTime"); wt != nullptr && wt->is<bson::date_time>()) {
    ev.wall_time = wt->as<bson::date_time>();
  }
  if (const bson::value* n = raw.get("ns"); n != nullptr && n->is_document()) {
    const bson::value* db = n->as_document().get("db");
    const bson::value* coll = n->as_document().get("coll");
    if (db != nullptr && db->is_string()) ev.source.db = db->as_string();
    if (coll != nullptr && coll->is_string()) ev.source.coll = coll->as_string();
  }
  if (!ev.is_document_event()) return ev;
  if (ev.source.db.empty() || ev.source.coll.empty()) {
    return fail(ev.op_name + " event has no ns {db, coll}");
  }

  const bson::value* key = raw.get("documentKey");
  if (key == nullptr || !key->is_document() || key->as_document().get("_id") == nullptr) {
    return fail(ev.op_name + " event has no documentKey._id");
  }
  ev.id = *key->as_document().get("_id");

  auto full = take_document(raw, "fullDocument");
  if (!full) return full.error();
  ev.full_document = std::move(*full);
  auto before = take_document(raw, "fullDocumentBeforeChange");
  if (!before) return before.error();
  ev.full_document_before_change = std::move(*before);
  if ((ev.op == operation::insert || ev.op == operation::replace) && !ev.full_document) {
    return fail(ev.op_name + " event has no fullDocument");
  }

  if (ev.op == operation::update) {
    const bson::value* desc = raw.get("updateDescription");
    if (desc == nullptr || !desc->is_document())
      return fail("update event has no updateDescription");
    const auto& d = desc->as_document();
    if (const bson::value* updated = d.get("updatedFields")) {
      if (!updated->is_document())
        return fail("updateDescription.updatedFields must be a document");
      for (const auto& f : updated->as_document())
        ev.touched.push_back(f.name);
    }
    if (const bson::value* removed = d.get("removedFields")) {
      if (!removed->is_array()) return fail("updateDescription.removedFields must be an array");
      for (const auto& r : removed->as_array()) {
        if (!r.is_string()) return fail("updateDescription.removedFields must hold strings");
        ev.touched.push_back(r.as_string());
      }
    }
    if (const bson::value* truncated = d.get("truncatedArrays");
        truncated && truncated->is_array()) {
      for (const auto& t : truncated->as_array()) {
        const bson::value* field = t.is_document() ? t.as_document().get("field") : nullptr;
        if (field == nullptr || !field->is_string()) {
          return fail("updateDescription.truncatedArrays entries need a field string");
        }
        ev.touched.push_back(field->as_string());
      }
    }
  }
  return ev;
}

bool touches(const std::vector<std::string>& touched, const std::vector<std::string>& paths) {
  return std::any_of(touched.begin(), touched.end(), [&](const std::string& t) {
    return std::any_of(paths.begin(), paths.end(),
                       [&](const std::string& p) { return query::paths_overlap(t, p); });
  });
}

}  // namespace denormd::mapping
