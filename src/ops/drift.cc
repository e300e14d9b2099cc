#include "ops/drift.h"

#include <algorithm>

#include "mapping/planner.h"

namespace denormd::ops {

namespace {

// Where field `f` lives inside a target document or array element.
std::string copy_path(const mapping::mapping& m, const mapping::field_map& f) {
  return m.into.empty() ? f.name : m.into + "." + f.name;
}

bool usable_key(const bson::value* key) {
  return key != nullptr && !key->is_null();
}

void add_key(std::vector<bson::value>& keys, const bson::value& key) {
  const bool seen = std::any_of(keys.begin(), keys.end(),
                                [&](const bson::value& k) { return bson::compare(k, key) == 0; });
  if (!seen) keys.push_back(key);
}

// Compares the copies in `holder` (the target, or one array element) with `source`;
// `prefix` is the holder's path in the target ("" or "items.2.").
void compare_copies(const mapping::mapping& m, const bson::document& holder,
                    const std::string& prefix, const bson::value& key, const bson::document* source,
                    copy_finding& out) {
  if (source == nullptr) {
    add_key(out.missing_keys, key);
    if (m.on_source_delete != mapping::delete_policy::unset) return;
  }
  bool drifted = false;
  for (const auto& f : m.fields) {
    const std::string path = copy_path(m, f);
    const bson::value* want = source != nullptr ? source->find_path(f.source_path) : nullptr;
    const bson::value* have = holder.find_path(path);
    const bool same = want == nullptr ? have == nullptr : have != nullptr && *have == *want;
    if (!same) {
      out.paths.push_back(prefix + path);
      drifted = true;
    }
  }
  if (drifted) add_key(out.drifted_keys, key);
}

}  // namespace

bool value_less::operator()(const bson::value& a, const bson::value& b) const {
  return bson::compare(a, b) < 0;
}

std::vector<bson::value> referenced_keys(const mapping::mapping& m, const bson::document& target) {
  std::vector<bson::value> keys;
  if (m.target_array.empty()) {
    const bson::value* key = target.find_path(m.target_key);
    if (usable_key(key)) keys.push_back(*key);
    return keys;
  }
  const bson::value* items = target.find_path(m.target_array);
  if (items == nullptr || !items->is_array()) return keys;
  for (const auto& item : items->as_array()) {
    if (!item.is_document()) continue;
    const bson::value* key = item.as_document().find_path(m.target_key);
    if (usable_key(key)) add_key(keys, *key);
  }
  return keys;
}

copy_finding check_copy(const mapping::mapping& m, const bson::document& target,
                        const source_lookup& source) {
  copy_finding out;
  if (m.target_array.empty()) {
    const bson::value* key = target.find_path(m.target_key);
    if (usable_key(key)) compare_copies(m, target, "", *key, source(*key), out);
    return out;
  }
  const bson::value* items = target.find_path(m.target_array);
  if (items == nullptr || !items->is_array()) return out;
  const auto& elements = items->as_array();
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (!elements[i].is_document()) continue;
    const bson::value* key = elements[i].as_document().find_path(m.target_key);
    if (!usable_key(key)) continue;
    compare_copies(m, elements[i].as_document(), m.target_array + "." + std::to_string(i) + ".",
                   *key, source(*key), out);
  }
  return out;
}

std::vector<std::string> check_recent(const mapping::mapping& m, const bson::document& parent,
                                      const bson::array& expected) {
  static const bson::array empty;
  const bson::value* have = parent.find_path(m.into);
  if (have != nullptr && !have->is_array()) return {m.into};
  const bson::array& actual = have != nullptr ? have->as_array() : empty;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < std::max(actual.size(), expected.size()); ++i) {
    if (i >= actual.size() || i >= expected.size() || !(actual[i] == expected[i])) {
      paths.push_back(m.into + "." + std::to_string(i));
    }
  }
  return paths;
}

mapping::write_op refill_for(const mapping::mapping& m, bson::document parents) {
  return mapping::make_refill(m, std::move(parents));
}

void narrow_to(mapping::write_op& op, const bson::value& id) {
  if (op.filter.contains("_id")) {
    op.filter = bson::document{{"$and", bson::array{bson::document{{"_id", id}}, op.filter}}};
  } else {
    bson::document filter{{"_id", id}};
    for (auto& f : op.filter.fields())
      filter.append(std::move(f.name), std::move(f.val));
    op.filter = std::move(filter);
  }
  if (op.kind == mapping::write_kind::update_many) op.kind = mapping::write_kind::update_one;
}

}  // namespace denormd::ops
