#pragma once
// A YAML document as a tree of plain values, read with libyaml: what a small configuration
// file such as the web config file (http/web_config.h) needs, and nothing more (no tags, no
// type resolution beyond null; anchors and aliases are expanded).
//
// Lifecycle: a value; parse_yaml() builds one. Thread-safety: none needed (immutable once built).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.h"

namespace denormd::http {

struct yaml_node {
  enum class kind { null, scalar, sequence, mapping };
  kind type = kind::null;
  int line = 1;        // where the node starts, 1-based
  std::string text;    // a scalar's value
  bool plain = false;  // a scalar written without quotes (true and false are booleans only then)
  std::vector<yaml_node> items;                            // a sequence's
  std::vector<std::pair<std::string, yaml_node>> entries;  // a mapping's, in file order

  // The entry named `key` of a mapping; nullptr when there is none.
  const yaml_node* find(std::string_view key) const;
};

// One document: an empty text (or comments only) is a null node. Errors: libyaml's problem
// with its line ("line 3 column 5: mapping values are not allowed in this context"), more
// than one document, a key that is not a scalar or appears twice in a mapping, nesting over
// 64 levels, or over 100,000 nodes once aliases are expanded.
expected<yaml_node> parse_yaml(std::string_view text);

}  // namespace denormd::http
