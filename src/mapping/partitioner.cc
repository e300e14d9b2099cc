#include "mapping/partitioner.h"

#include <cassert>
#include <functional>
#include <string>
#include <unordered_set>

#include "bson/value_hash.h"

namespace denormd::mapping {

namespace {

std::size_t mix(std::size_t seed, std::size_t h) {
  // boost::hash_combine's mixing step.
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// The unit an op must stay ordered with, hashed; nullopt when its documents are not known in
// advance (its mapping then keeps the batch's ops in one group), and for a dead letter, which
// writes nothing a later op reads.
std::optional<std::size_t> unit_of(const write_op& op) {
  if (const auto* fill = op.as<fill_write>()) {
    // The target document, whichever key the fill was planned for.
    const bson::value* id = fill->filter.get("_id");
    const bson::value_hash hash;
    return mix(id != nullptr ? hash(*id) : hash(bson::value(fill->filter)),
               hash(bson::value(fill->array_filters)));
  }
  switch (op.merge) {
    case merge_rule::last_wins:
    case merge_rule::push:
    case merge_rule::parent_barrier:
    case merge_rule::delta:
      return bson::value_hash{}(op.merge_key);
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
