#include "app/describe.h"

#include "bson/json.h"

namespace denormd::app {

namespace {

std::string join_sources(const mapping::mapping& m) {
  std::string s;
  for (const auto& f : m.fields)
    s += (s.empty() ? "" : ", ") + f.source_path;
  return s;
}

std::string key_doc(std::initializer_list<std::pair<std::string, int>> keys) {
  bson::document d;
  for (const auto& [k, v] : keys)
    d.append(k, v);
  return bson::to_json(d);
}

}  // namespace

std::vector<index_need> indexes_needed(const mapping::mapping& m) {
  std::vector<index_need> out;
  if (m.kind == mapping::mapping_kind::copy) {
    const std::string key =
        m.target_array.empty() ? m.target_key : m.target_array + "." + m.target_key;
    if (key != "_id")
      out.push_back({m.target, key_doc({{key, 1}}), "find the targets of a source"});
    if (m.source_key != "_id") {
      out.push_back({m.source, key_doc({{m.source_key, 1}}), "look up a target's source"});
    }
    return out;
  }
  bson::document children{{m.parent_key, 1}};
  for (const auto& s : m.sort)
    children.append(m.field_named(s.name)->source_path, s.direction);
  out.push_back({m.source, bson::to_json(children), "refill: the newest children of a parent"});
  out.push_back({m.target, key_doc({{m.into + "." + m.id_field, 1}}),
                 "find the parent holding a deleted or moved child"});
  if (m.parent_field != "_id") {
    out.push_back({m.target, key_doc({{m.parent_field, 1}}), "find the parent of a child"});
  }
  return out;
}

std::string describe_mapping(const mapping::mapping& m) {
  std::string s = m.name + " (" + (m.kind == mapping::mapping_kind::copy ? "copy" : "recent") +
                  ", " + m.file + ")\n";
  if (!m.description.empty()) s += "  " + m.description + "\n";
  s += "  reads " + m.source.full() + " (" + join_sources(m) + ")\n";
  if (m.kind == mapping::mapping_kind::copy) {
    std::string filter =
        (m.target_array.empty() ? m.target_key : m.target_array + "." + m.target_key) +
        ": <source " + m.source_key + ">";
    if (m.where) filter += ", where " + bson::to_json(m.where->filter());
    const char* op = m.target_array.empty() && m.target_key == "_id" ? "updateOne" : "updateMany";
    std::string paths;
    for (const auto& f : m.fields)
      paths += (paths.empty() ? "" : ", ") + m.target_path(f);
    s += "  insert, replace, and updates touching those fields:\n";
    s += "    " + std::string(op) + " " + m.target.full() + " {" + filter + "}\n";
    s += "      $set " + paths + " (a missing source field is $unset)\n";
    if (!m.target_array.empty()) {
      s += "      arrayFilters [{e." + m.target_key + ": <source " + m.source_key + ">}]\n";
    }
    s += std::string("  delete: ") +
         (m.on_source_delete == mapping::delete_policy::keep ? "keep (no write)"
                                                             : "$unset " + paths) +
         "\n";
    if (m.fill_new_targets) s += "  new or re-keyed targets: filled from the source\n";
  } else {
    std::string sort;
    for (const auto& k : m.sort)
      sort += (sort.empty() ? "" : ", ") + k.name + ":" + std::to_string(k.direction);
    s += "  keeps " + m.target.full() + "." + m.into + ": the " + std::to_string(m.limit) +
         " first by {" + sort + "} of the children whose " + m.parent_key + " = parent " +
         m.parent_field + (m.filter ? " and matching " + bson::to_json(m.filter->filter()) : "") +
         "\n";
    s += "  insert: guarded $push {$each, $sort, $slice: " + std::to_string(m.limit) + "}\n";
    s += "  update: element $set in place; sort key changed -> refill; moved or filtered out -> " +
         std::string(m.on_source_delete == mapping::delete_policy::pull ? "$pull" : "refill") +
         "\n";
    s += std::string("  delete: ") +
         (m.on_source_delete == mapping::delete_policy::pull
              ? "$pull the element"
              : "refill the parent from the children") +
         "\n";
    if (m.fill_new_targets) s += "  new or re-keyed parents: refilled from the children\n";
  }
  for (const auto& ix : indexes_needed(m)) {
    s += "  index " + ix.where.full() + " " + ix.keys + "  (" + ix.why + ")\n";
  }
  return s;
}

}  // namespace denormd::app
