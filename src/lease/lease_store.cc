#include "lease/lease_store.h"

namespace denormd::lease {

namespace {

// A value from the command line or a document, as a pipeline must take it: never a path or
// an operator, whatever it starts with.
bson::document literal(bson::value v) {
  return bson::document{{"$literal", std::move(v)}};
}

bson::document now_plus(std::int64_t ms) {
  return bson::document{{"$add", bson::array{"$$NOW", ms}}};
}

constexpr std::uint32_t duplicate_key = 11000;

// A one-statement write's outcome as a status: the command's failure, or the statement's.
mongo::status written(const mongo::result<mongo::bulk_outcome>& out) {
  if (!out) return mongo::failure(out.error());
  if (out->write_error) return mongo::failure(*out->write_error);
  return {};
}

}  // namespace

lease_store::lease_store(mongo::document_client& conn, std::string db, std::int64_t ttl_ms)
    : conn_(conn), db_(std::move(db)), ttl_ms_(ttl_ms) {}

mongo::result<mongo::bulk_outcome> lease_store::update_one(const char* coll,
                                                           const bson::document& filter,
                                                           const bson::array& pipeline, bool upsert,
                                                           std::chrono::milliseconds max_time) {
  mongo::write_request r;
  r.filter = &filter;
  const bson::document none;
  r.update = &none;
  r.pipeline = &pipeline;
  r.upsert = upsert;
  return conn_.update_one_within(db_, coll, r, max_time);
}

mongo::result<std::optional<std::int64_t>> lease_store::acquire(const std::string& unit,
                                                                const std::string& me) {
  const bson::document filter{
      {"_id", unit},
      {"$or",
       bson::array{bson::document{{"owner", ""}}, bson::document{{"owner", me}},
                   bson::document{
                       {"$expr", bson::document{{"$lt", bson::array{"$expiresAt", "$$NOW"}}}}}}}};
  const bson::array pipeline{bson::document{
      {"$set",
       bson::document{
           {"previousOwner", bson::document{{"$ifNull", bson::array{"$owner", ""}}}},
           {"owner", literal(me)},
           {"epoch",
            bson::document{
                {"$add",
                 bson::array{bson::document{{"$ifNull", bson::array{"$epoch", std::int64_t{0}}}},
                             std::int64_t{1}}}}},
           {"expiresAt", now_plus(ttl_ms_)},
           {"acquiredAt", "$$NOW"}}}}};
  auto out = update_one(leases_collection, filter, pipeline, true, acquire_time());
  if (!out) return out.error();
  if (out->write_error) {
    // The row exists and matched none of the conditions: another instance holds it.
    if (out->write_error->code == duplicate_key) return std::optional<std::int64_t>{};
    return mongo::failure(*out->write_error);
  }
  if (out->matched == 0 && out->upserted == 0) return std::optional<std::int64_t>{};
  auto row = conn_.find_one(db_, leases_collection, bson::document{{"_id", unit}});
  if (!row) return row.error();
  const bson::value* owner = *row ? (*row)->get("owner") : nullptr;
  const bson::value* epoch = *row ? (*row)->get("epoch") : nullptr;
  if (owner == nullptr || !owner->is_string() || owner->as_string() != me || epoch == nullptr ||
      !epoch->is_number()) {
    return std::optional<std::int64_t>{};  // taken again in between: not ours after all
  }
  return std::optional<std::int64_t>{static_cast<std::int64_t>(epoch->to_double())};
}

mongo::result<bool> lease_store::renew(const std::string& unit, const std::string& me,
                                       std::int64_t epoch) {
  const bson::document filter{{"_id", unit}, {"owner", me}, {"epoch", epoch}};
  const bson::array pipeline{
      bson::document{{"$set", bson::document{{"expiresAt", now_plus(ttl_ms_)}}}}};
  auto out = update_one(leases_collection, filter, pipeline, false, statement_time());
  if (auto st = written(out); !st) return st.error();
  return out->matched == 1;
}

mongo::result<bool> lease_store::raise_epoch(const std::string& unit, const std::string& me,
                                             std::int64_t from, std::int64_t to) {
  const bson::document filter{{"_id", unit}, {"owner", me}, {"epoch", from}};
  const bson::array pipeline{bson::document{{"$set", bson::document{{"epoch", to}}}}};
  auto out = update_one(leases_collection, filter, pipeline, false, statement_time());
  if (auto st = written(out); !st) return st.error();
  return out->matched == 1;
}

mongo::status lease_store::release(const std::string& unit, const std::string& me,
                                   std::int64_t epoch) {
  const bson::document filter{{"_id", unit}, {"owner", me}, {"epoch", epoch}};
  const bson::array pipeline{
      bson::document{{"$set", bson::document{{"owner", ""}, {"expiresAt", bson::date_time{0}}}}}};
  return written(update_one(leases_collection, filter, pipeline, false, statement_time()));
}

mongo::status lease_store::heartbeat(const std::string& me, const std::vector<std::string>& units,
                                     const bson::document& report) {
  bson::array held;
  for (const auto& u : units)
    held.push_back(u);
  const bson::document filter{{"_id", me}};
  const bson::array pipeline{
      bson::document{{"$set", bson::document{{"expiresAt", now_plus(ttl_ms_)},
                                             {"seenAt", "$$NOW"},
                                             {"units", literal(held)},
                                             {"report", literal(report)}}}}};
  return written(update_one(instances_collection, filter, pipeline, true, statement_time()));
}

mongo::status lease_store::leave(const std::string& me) {
  const bson::document filter{{"_id", me}};
  const bson::array pipeline{bson::document{
      {"$set", bson::document{{"expiresAt", bson::date_time{0}}, {"units", bson::array{}}}}}};
  return written(update_one(instances_collection, filter, pipeline, false, statement_time()));
}

mongo::result<std::vector<std::string>> lease_store::live() {
  const bson::array pipeline{
      bson::document{
          {"$match",
           bson::document{{"$expr", bson::document{{"$gt", bson::array{"$expiresAt", "$$NOW"}}}}}}},
      bson::document{{"$project", bson::document{{"_id", 1}}}}};
  auto docs = conn_.aggregate(db_, instances_collection, pipeline);
  if (!docs) return docs.error();
  std::vector<std::string> out;
  for (const auto& d : *docs) {
    if (const bson::value* id = d.get("_id"); id != nullptr && id->is_string())
      out.push_back(id->as_string());
  }
  return out;
}

mongo::result<std::vector<lease_entry>> lease_store::table() {
  const bson::array pipeline{bson::document{
      {"$addFields",
       bson::document{
           {"expired", bson::document{{"$lt", bson::array{"$expiresAt", "$$NOW"}}}},
           {"remainingMs", bson::document{{"$subtract", bson::array{"$expiresAt", "$$NOW"}}}}}}}};
  auto docs = conn_.aggregate(db_, leases_collection, pipeline);
  if (!docs) return docs.error();
  std::vector<lease_entry> out;
  for (const auto& d : *docs) {
    const bson::value* id = d.get("_id");
    if (id == nullptr || !id->is_string()) continue;
    lease_entry e;
    e.row.unit = id->as_string();
    if (const bson::value* v = d.get("owner"); v != nullptr && v->is_string())
      e.row.owner = v->as_string();
    if (const bson::value* v = d.get("epoch"); v != nullptr && v->is_number())
      e.row.epoch = static_cast<std::int64_t>(v->to_double());
    if (const bson::value* v = d.get("expired"); v != nullptr && v->is<bool>())
      e.row.expired = v->as<bool>();
    if (const bson::value* v = d.get("expiresAt"); v != nullptr && v->is<bson::date_time>())
      e.expires_ms = v->as<bson::date_time>().millis;
    if (const bson::value* v = d.get("remainingMs"); v != nullptr && v->is_number())
      e.remaining_ms = static_cast<std::int64_t>(v->to_double());
    out.push_back(std::move(e));
  }
  return out;
}

mongo::result<std::vector<instance_row>> lease_store::instances() {
  const bson::array pipeline{bson::document{
      {"$addFields",
       bson::document{{"live", bson::document{{"$gt", bson::array{"$expiresAt", "$$NOW"}}}},
                      {"ageMs", bson::document{{"$subtract", bson::array{"$$NOW", "$seenAt"}}}}}}}};
  auto docs = conn_.aggregate(db_, instances_collection, pipeline);
  if (!docs) return docs.error();
  std::vector<instance_row> out;
  for (const auto& d : *docs) {
    const bson::value* id = d.get("_id");
    if (id == nullptr || !id->is_string()) continue;
    instance_row row;
    row.name = id->as_string();
    if (const bson::value* v = d.get("live"); v != nullptr && v->is<bool>())
      row.live = v->as<bool>();
    if (const bson::value* v = d.get("seenAt"); v != nullptr && v->is<bson::date_time>())
      row.seen_ms = v->as<bson::date_time>().millis;
    if (const bson::value* v = d.get("ageMs"); v != nullptr && v->is_number())
      row.age_ms = static_cast<std::int64_t>(v->to_double());
    if (const bson::value* v = d.get("units"); v != nullptr && v->is_array()) {
      for (const auto& u : v->as_array()) {
        if (u.is_string()) row.holds.push_back(u.as_string());
      }
    }
    if (const bson::value* v = d.get("report"); v != nullptr && v->is_document())
      row.report = instance_report_of(v->as_document());
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace denormd::lease
