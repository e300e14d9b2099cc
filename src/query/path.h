#pragma once
// MongoDB's path resolution for queries: a dotted path is followed through sub-documents,
// numeric components index arrays, and other components fan out over array elements.

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "bson/value.h"

namespace denormd::query {

// Calls `visit(value, array_index)` for each value the path reaches. `array_index` is the
// index of the element in the first array the path fanned out over (for positional `$`).
// Leaf arrays are reported whole; callers decide whether to look inside them.
// Returns false from `visit` to stop early. Reports nothing when the path is missing.
using path_visitor = std::function<bool(const bson::value&, std::optional<std::size_t>)>;
void resolve_path(const bson::document& doc, std::string_view path, const path_visitor& visit);

// Like resolve_path, but also reports each branch where the path ends early (value nullptr):
// MongoDB's `{path: null}` matches those.
using branch_visitor = std::function<bool(const bson::value*, std::optional<std::size_t>)>;
void resolve_branches(const bson::document& doc, std::string_view path,
                      const branch_visitor& visit);

// Parses a canonical non-negative array index ("0", "12"; not "01", "-1", "1a").
std::optional<std::size_t> parse_index(std::string_view component);

// The components of a dotted path that are not array indexes (parse_index): "items.0.status"
// gives {"items", "status"}, "items.3" gives {"items"}. Change events name array elements by
// index where a query path fans out over them; without the indexes both compare. A numeric
// field name of a sub-document ({a: {"0": 1}}) is dropped too: comparing less only makes
// more paths compare equal.
std::vector<std::string_view> field_components(std::string_view path);

}  // namespace denormd::query
