#include "ops/commands/orphan_sweep.h"

#include <set>

#include "common/overloaded.h"
#include "mapping/change_event.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"
#include "mapping/write_op.h"
#include "ops/commands/computed_reads.h"

namespace denormd::ops {

namespace {

// The top-level component of a dotted path, projected once.
void project(bson::document& projection, const std::string& path) {
  const std::string field = path.substr(0, path.find('.'));
  if (!projection.contains(field)) projection.append(field, 1);
}

}  // namespace

mongo::result<source_map> read_sources(mongo::connection& conn, const mapping::mapping& m,
                                       const mapping::copy_kind& kind,
                                       const std::vector<bson::document>& targets,
                                       const mongo::find_options& projection) {
  std::set<bson::value, value_less> keys;
  for (const auto& t : targets) {
    for (auto& k : kind.referenced_keys(m, t))
      keys.insert(std::move(k));
  }
  return read_source_keys(conn, m, kind, bson::array(keys.begin(), keys.end()), projection);
}

mongo::result<source_map> read_source_keys(mongo::connection& conn, const mapping::mapping& m,
                                           const mapping::copy_kind& kind, const bson::array& keys,
                                           const mongo::find_options& projection) {
  source_map found;
  if (keys.empty()) return found;
  // referenced_keys() left out every key that could read as a query, so $in matches literally.
  const bson::document query{{kind.source_key, mapping::keys_match(kind.source_key, keys)}};
  std::vector<bson::document> docs;
  auto st =
      conn.find_each(m.source.db, m.source.coll, query, projection, [&](bson::document&& doc) {
        docs.push_back(std::move(doc));
        return true;
      });
  if (!st) return st.error();
  // A field whose expression fails stays absent, as the stream writes it.
  if (auto computed = compute_fields(conn, m, docs); !computed) return computed.error();
  for (auto& doc : docs) {
    const bson::value* k = doc.find_path(kind.source_key);
    if (k != nullptr && !mapping::reference_problem(*k)) found.emplace(*k, std::move(doc));
  }
  return found;
}

bson::document copy_target_projection(const mapping::mapping& m, const mapping::copy_kind& kind) {
  bson::document projection{{"_id", 1}};
  if (kind.target_array.empty()) {
    project(projection, kind.target_key);
    for (const auto& f : m.fields)
      project(projection, m.into.empty() ? f.name : m.into);
  } else {
    project(projection, kind.target_array);
  }
  return projection;
}

std::vector<mapping::write_op> plan_source(const mapping::planner& planner,
                                           const mapping::mapping& m, const mapping::copy_kind& k,
                                           const bson::value& key, const bson::document* source) {
  mapping::change_event ev;
  ev.source = m.source;
  if (source != nullptr) {
    ev.op = mapping::operation::insert;
    ev.op_name = "insert";
    if (const bson::value* id = source->get("_id")) ev.id = *id;
    ev.full_document = *source;
  } else {
    ev.op = mapping::operation::delete_;
    ev.op_name = "delete";
    if (k.source_key == "_id") {
      ev.id = key;
    } else {
      bson::document before;
      mapping::set_path(before, k.source_key, key);
      ev.full_document_before_change = std::move(before);
    }
  }
  std::vector<mapping::write_op> planned;
  planner.plan(ev, planned);
  std::vector<mapping::write_op> out;
  for (auto& op : planned) {
    if (op.source_mapping == &m && op.as<mapping::update_write>() != nullptr) {
      out.push_back(std::move(op));
    }
  }
  return out;
}

const mapping::copy_kind* orphan_sweep::kind_of(const mapping::mapping& m) {
  if (m.on_source_delete != mapping::delete_policy::unset) return nullptr;
  // One arm per kind: a new kind says whether its dependents can be orphans.
  return m.visit(overloaded{
      [](const mapping::copy_kind& k) { return &k; },
      [](const mapping::recent_kind&) -> const mapping::copy_kind* { return nullptr; },
      [](const mapping::aggregate_kind&) -> const mapping::copy_kind* { return nullptr; }});
}

orphan_sweep::orphan_sweep(const mapping::planner& planner, const mapping::mapping& m,
                           const mapping::copy_kind& kind)
    : planner_(planner), m_(m), kind_(kind) {}

bson::document orphan_sweep::filter(const std::optional<bson::value>& after) const {
  bson::array all;
  if (after) all.push_back(mapping::after_key_filter(*after));
  if (kind_.where) all.push_back(kind_.where->filter());
  // A target holding no copy has nothing to unset (an element's copy counts: MongoDB's
  // dotted path reaches into the array).
  bson::array any;
  for (const auto& p : kind_.written_paths(m_))
    any.push_back(bson::document{{p, bson::document{{"$exists", true}}}});
  all.push_back(any.size() == 1 ? any.front() : bson::document{{"$or", std::move(any)}});
  if (all.size() == 1) return all.front().as_document();
  return bson::document{{"$and", std::move(all)}};
}

orphan_sweep::plan_result orphan_sweep::plan(const std::vector<bson::document>& batch,
                                             const mapping::source_lookup& sources) const {
  plan_result out;
  std::set<bson::value, value_less> unset;
  for (const auto& t : batch) {
    const bson::value* id = t.get("_id");
    if (id == nullptr) continue;
    bool written = false;
    // Under "unset", a key whose source is gone drifts exactly when its holder keeps a copy.
    for (const auto& key : kind_.check(m_, t, sources).drifted_keys) {
      if (sources(key) != nullptr) continue;  // the first phase and the stream write these
      for (auto& op : plan_source(planner_, m_, kind_, key, nullptr)) {
        narrow_to(op, *id);
        out.ops.push_back(std::move(op));
        written = true;
      }
      if (unset.insert(key).second) out.keys.push_back(key);
    }
    if (written) ++out.targets;
  }
  return out;
}

}  // namespace denormd::ops
