#include "ops/services/streamed_sets.h"

#include <algorithm>

namespace denormd::ops {

mongo::status record_streamed(mongo::document_client& conn, const std::string& meta_db,
                              const mapping::ns& source, const mapping::planner& p) {
  bson::document mappings;
  for (const auto& name : p.mappings_reading(source)) {
    for (const auto& m : p.mappings()) {
      if (m.name == name) mappings.append(name, m.fingerprint());
    }
  }
  const bson::document filter{{"_id", source.unit()}};
  // A pipeline update replaces the whole field: mapping names are not paths here.
  const bson::array pipeline{bson::document{
      {"$set", bson::document{{"mappings", bson::document{{"$literal", mappings}}}}}}};
  const bson::document none;
  mongo::write_request r;
  r.filter = &filter;
  r.update = &none;
  r.pipeline = &pipeline;
  r.upsert = true;
  auto out = conn.update_bulk(meta_db, streamed_collection, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) return mongo::failure(*out->write_error);
  return {};
}

namespace {

// The units `n` is streamed as: its partitions when it is partitioned, else itself.
std::vector<std::string> units_of(const mapping::ns& n, const std::vector<mapping::ns>& units) {
  std::vector<std::string> out;
  for (const auto& u : units) {
    if (u.collection() == n && !u.part.whole()) out.push_back(u.unit());
  }
  if (out.empty()) out.push_back(n.unit());
  return out;
}

}  // namespace

std::vector<std::string> not_streamed(const std::vector<const mapping::mapping*>& which,
                                      const std::vector<bson::document>& records,
                                      const std::vector<mapping::ns>& units) {
  std::vector<std::string> out;
  std::vector<std::string> ids;
  for (const mapping::mapping* m : which) {
    for (const auto& n : reads_of(*m)) {
      for (const auto& u : units_of(n, units))
        ids.push_back(u);
    }
    for (const auto& id : ids) {
      const auto record = std::find_if(records.begin(), records.end(), [&](const auto& d) {
        const bson::value* v = d.get("_id");
        return v != nullptr && v->is_string() && v->as_string() == id;
      });
      const bson::value* mappings = record != records.end() ? record->get("mappings") : nullptr;
      const bson::value* print = mappings != nullptr && mappings->is_document()
                                     ? mappings->as_document().get(m->name)
                                     : nullptr;
      if (print == nullptr || !print->is_string() || print->as_string() != m->fingerprint())
        out.push_back(id + " (" + m->name + ")");
    }
    ids.clear();
  }
  return out;
}

mongo::result<std::vector<std::string>> not_streamed(
    mongo::document_client& conn, const std::string& meta_db,
    const std::vector<const mapping::mapping*>& which, const std::vector<mapping::ns>& units) {
  auto records = conn.find(meta_db, streamed_collection, bson::document{}, {});
  if (!records) return records.error();
  return not_streamed(which, *records, units);
}

}  // namespace denormd::ops
