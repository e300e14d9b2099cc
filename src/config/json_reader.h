#pragma once
// Parses a mapping file's JSON text into an ordered tree, guarding against hostile input:
// nesting deeper than a limit and duplicate keys are errors with a JSON pointer, and objects
// with many keys are built in linear time (nlohmann's ordered_map checks every earlier key on
// each insert, which made 100,000 keys take minutes). Stateless; safe from any thread.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/expected.h"

namespace denormd::config {

struct json_problem {
  std::string pointer;  // where the problem is ("" for the whole text)
  std::string message;
};

// Objects and arrays nested deeper than `max_depth` (the outermost value is level 1) are
// rejected before they are built, so nothing downstream recurses without bound.
expected<nlohmann::ordered_json, json_problem> read_json(std::string_view text, int max_depth);

}  // namespace denormd::config
