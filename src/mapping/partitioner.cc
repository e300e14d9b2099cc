#include "mapping/partitioner.h"

#include <cassert>
#include <cmath>
#include <functional>
#include <string_view>
#include <unordered_set>

#include "bson/json.h"

namespace denormd::mapping {

namespace {

std::size_t mix(std::size_t seed, std::size_t h) {
  // boost::hash_combine's mixing step.
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

std::size_t document_hash(const bson::document& d) {
  std::size_t h = 0x3;
  for (const auto& f : d) {
    h = mix(h, std::hash<std::string_view>{}(f.name));
    h = mix(h, value_hash(f.val));
  }
  return h;
}

// The unit an op must stay ordered with, hashed; nullopt when its documents are not known in
// advance (its mapping then keeps the batch's ops in one group), and for a dead letter, which
// writes nothing a later op reads.
std::optional<std::size_t> unit_of(const write_op& op) {
  if (const auto* fill = op.as<fill_write>()) {
    // The target document, whichever key the fill was planned for.
    const bson::value* id = fill->filter.get("_id");
    return mix(id != nullptr ? value_hash(*id) : document_hash(fill->filter),
               value_hash(bson::value(fill->array_filters)));
  }
  switch (op.merge) {
    case merge_rule::last_wins:
    case merge_rule::push:
    case merge_rule::parent_barrier:
    case merge_rule::delta:
      return value_hash(op.merge_key);
    case merge_rule::none:
    case merge_rule::mapping_barrier:
    case merge_rule::recompute:
    case merge_rule::retype:
      return std::nullopt;
  }
  return std::nullopt;
}

std::size_t mapping_hash(const write_op& op) {
  return op.source_mapping != nullptr ? std::hash<std::string>{}(op.source_mapping->name) : 0;
}

}  // namespace

std::size_t value_hash(const bson::value& v) {
  const auto rank = static_cast<std::size_t>(bson::canonical_rank(v) + 2);
  if (v.is_number()) {
    double d = v.to_double();
    if (std::isnan(d)) return mix(rank, 0x7ff8);
    if (d == 0) d = 0;  // -0.0 equals 0
    return mix(rank, std::hash<double>{}(d));
  }
  if (v.is_string()) return mix(rank, std::hash<std::string_view>{}(v.as_string()));
  if (v.is<bson::symbol>())
    return mix(rank, std::hash<std::string_view>{}(v.as<bson::symbol>().text));
  if (v.is_document()) return mix(rank, document_hash(v.as_document()));
  if (v.is_array()) {
    std::size_t h = rank;
    for (const auto& e : v.as_array())
      h = mix(h, value_hash(e));
    return h;
  }
  // Every other type is equal only to itself, so its exact text will do.
  return mix(rank, std::hash<std::string>{}(bson::to_json(bson::document{{"v", v}})));
}

std::vector<std::size_t> partition(std::vector<write_op>& ops, std::size_t groups) {
  assert(groups >= 1);
  if (groups == 1 || ops.empty()) {
    std::vector<std::size_t> bounds(groups + 1, ops.size());  // all in the first group
    bounds[0] = 0;
    return bounds;
  }
  std::vector<std::size_t> bounds(groups + 1, 0);
  // Mappings with an op of unknown documents stay whole.
  std::unordered_set<const mapping*> whole;
  for (const auto& op : ops) {
    if (!op.as<dead_letter_write>() && !unit_of(op)) whole.insert(op.source_mapping);
  }
  std::vector<std::size_t> group(ops.size());
  std::vector<std::size_t> sizes(groups, 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    std::size_t h = mapping_hash(op);
    if (!whole.contains(op.source_mapping)) {
      if (const auto unit = unit_of(op)) h = mix(h, *unit);
    }
    group[i] = h % groups;
    ++sizes[group[i]];
  }
  for (std::size_t g = 0; g < groups; ++g)
    bounds[g + 1] = bounds[g] + sizes[g];
  std::vector<std::size_t> next(bounds.begin(), bounds.end() - 1);
  std::vector<write_op> out(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    out[next[group[i]]++] = std::move(ops[i]);
  ops = std::move(out);
  return bounds;
}

}  // namespace denormd::mapping
