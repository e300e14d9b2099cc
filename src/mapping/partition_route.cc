#include "mapping/partition_route.h"

#include <algorithm>
#include <map>
#include <utility>

#include "bson/hashed_key.h"

namespace denormd::mapping {

stream_route child_route(const std::string& parent_key,
                         const std::optional<query::matcher>& filter) {
  stream_route r{parent_key, true, {parent_key}};
  if (filter) {
    for (const auto& p : filter->paths())
      r.moving_paths.push_back(p);
  }
  return r;
}

bool owns(const partition& share, const bson::value& key) {
  if (share.whole()) return true;
  return bson::hashed_partition(bson::hashed_index_key(key), share.count) == share.index;
}

bson::value route_value(const bson::value& id, const bson::document* after,
                        const bson::document* before, bool is_delete, std::string_view key_path) {
  if (key_path == "_id") return id;
  const bson::document* doc = is_delete ? before : after;
  const bson::value* v = doc != nullptr ? doc->find_path(key_path) : nullptr;
  return v != nullptr ? *v : bson::value();
}

namespace {

// The partition, of `count`, of the value of `key` (an expression): as bson::hashed_partition.
bson::document partition_expr(bson::value key, int count) {
  bson::document null_if_missing{{"$ifNull", bson::array{std::move(key), bson::value()}}};
  bson::document hash{{"$toHashedIndexKey", std::move(null_if_missing)}};
  // $mod before $abs: $abs of the one hash INT64_MIN fails (bson::hashed_partition).
  bson::document mod{{"$mod", bson::array{std::move(hash), count}}};
  return bson::document{{"$abs", std::move(mod)}};
}

// `filter` and {$expr: condition}, in one query.
bson::document with_expr(bson::document filter, bson::document condition) {
  if (!filter.contains("$expr")) {
    filter.append("$expr", std::move(condition));
    return filter;
  }
  bson::document mine{{"$expr", std::move(condition)}};
  return bson::document{{"$and", bson::array{std::move(filter), std::move(mine)}}};
}

}  // namespace

bson::document owns_expr(const partition& share, bson::value key) {
  return bson::document{
      {"$eq", bson::array{partition_expr(std::move(key), share.count), share.index}}};
}

bson::document narrowed(bson::document filter, const partition& share, std::string_view field) {
  if (share.whole()) return filter;
  return with_expr(std::move(filter), owns_expr(share, "$" + std::string(field)));
}

bool handover::passed(std::string_view position) const {
  return std::all_of(after.begin(), after.end(),
                     [&](const std::string& a) { return position > std::string_view(a); });
}

std::optional<handover> handover_for(const partition& mine,
                                     const std::vector<unit_position>& stored) {
  std::map<int, handover> layouts;  // by count (1: the whole namespace)
  const std::string* own = nullptr;
  for (const auto& u : stored) {
    if (u.part == mine) {
      own = &u.position;
      continue;
    }
    const int count = u.part.whole() ? 1 : u.part.count;
    if (!mine.whole() && count == mine.count) continue;  // a sibling of this layout
    if (mine.whole() && count == 1) continue;
    handover& h = layouts[count];
    h.count = count;
    h.after.resize(static_cast<std::size_t>(count));
    h.after[static_cast<std::size_t>(u.part.whole() ? 0 : u.part.index)] = u.position;
  }
  const handover* newest = nullptr;
  std::string newest_least;
  for (const auto& [count, h] : layouts) {
    const std::string least = *std::min_element(h.after.begin(), h.after.end());
    if (newest == nullptr || least > newest_least) {
      newest = &h;
      newest_least = least;
    }
  }
  if (newest == nullptr) return std::nullopt;
  if (own != nullptr && newest->passed(*own)) return std::nullopt;
  return *newest;
}

key_share::key_share(partition mine, const handover* from, std::string_view position)
    : mine_(mine), from_(from), position_(position) {}

bool key_share::owns(const bson::value& key) const {
  if (!mapping::owns(mine_, key)) return false;
  if (from_ == nullptr) return true;
  const auto old = static_cast<std::size_t>(
      from_->count <= 1 ? 0 : bson::hashed_partition(bson::hashed_index_key(key), from_->count));
  return old >= from_->after.size() || position_ > std::string_view(from_->after[old]);
}

bson::document key_share::narrowed(bson::document filter, std::string_view field) const {
  filter = mapping::narrowed(std::move(filter), mine_, field);
  if (from_ == nullptr) return filter;
  // Only the dependents whose old owner has not applied this event.
  bson::array pending;
  for (std::size_t i = 0; i < from_->after.size(); ++i) {
    if (position_ > std::string_view(from_->after[i])) pending.push_back(static_cast<int>(i));
  }
  if (pending.size() == from_->after.size()) return filter;
  const std::string path = "$" + std::string(field);
  bson::document old_owner =
      from_->count <= 1 ? bson::document{{"$literal", 0}} : partition_expr(path, from_->count);
  return with_expr(std::move(filter),
                   bson::document{{"$in", bson::array{std::move(old_owner), std::move(pending)}}});
}

std::optional<bson::value> route_expr(std::string_view key_path) {
  if (key_path == "_id") return bson::value("$documentKey._id");
  if (key_path.empty() || key_path.find('.') != std::string_view::npos || key_path[0] == '$')
    return std::nullopt;
  const std::string field(key_path);
  bson::document is_delete{{"$eq", bson::array{"$operationType", "delete"}}};
  return bson::value(bson::document{
      {"$cond", bson::array{std::move(is_delete), "$fullDocumentBeforeChange." + field,
                            "$fullDocument." + field}}});
}

}  // namespace denormd::mapping
