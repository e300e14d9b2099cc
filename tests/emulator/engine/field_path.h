#pragma once
// Dotted update paths as MongoDB's update system reads them: components, array indexes, the
// positional forms `$`, `$[]`, `$[id]`, and the order in which sibling fields are applied.
// Stateless functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mongo_emulator::engine {

// "a.b.c" -> {"a", "b", "c"}; "" -> {}; empty components are kept ("a..b" -> {"a", "", "b"}).
std::vector<std::string> split_path(std::string_view dotted);
std::string join_path(const std::vector<std::string>& parts, std::size_t begin = 0,
                      std::size_t end = std::string::npos);

// An update path component used as an array index: all decimal digits (MongoDB's update code
// accepts leading zeros here, unlike the query language).
std::optional<std::size_t> update_index(std::string_view component);

bool is_positional(std::string_view component);               // "$"
bool is_array_filter_identifier(std::string_view component);  // "$[]" or "$[id]"
// "i" for "$[i]", "" for "$[]"; only for components that are array filter identifiers.
std::string array_filter_identifier(std::string_view component);

// The order MongoDB applies sibling update fields in: numbers (without leading zeros) by value,
// everything else bytewise (mongo::pathsupport::cmpPathsAndArrayIndexes).
struct path_less {
  bool operator()(const std::string& a, const std::string& b) const;
};

}  // namespace mongo_emulator::engine
