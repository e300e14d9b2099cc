#pragma once
// A parsed update: MongoDB's update node tree (UpdateObjectNode / UpdateArrayNode / leaf
// modifiers keyed by path component), the compiled array filters, or a replacement document.
// Built and validated by parse_update_plan; immutable afterwards and safe to share.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "field_path.h"
#include "modifier.h"
#include "pipeline.h"
#include "query/matcher.h"

namespace mongo_emulator::engine {

struct update_node {
  enum class kind { object, array, leaf };
  kind k = kind::object;
  // object: children by field name; array: by array filter identifier ("" for `$[]`).
  std::map<std::string, std::unique_ptr<update_node>, path_less> children;
  std::unique_ptr<update_node> positional;  // object nodes: the child at `$`
  std::optional<modifier> leaf;
};

struct update_plan {
  bool replacement = false;
  // A pipeline-style update (`u` an array): its stages, run over the document.
  std::optional<stage_list> pipeline;
  denormd::bson::document replacement_document;
  update_node root;
  std::map<std::string, denormd::query::matcher> array_filters;  // by identifier
  bool uses_positional = false;
};

denormd::expected<std::shared_ptr<const update_plan>> parse_update_plan(
    const denormd::bson::document& update, const std::vector<denormd::bson::document>& filters);
// A pipeline-style update: only the stages MongoDB allows in an update ($addFields/$set,
// $project/$unset, $replaceRoot/$replaceWith); others fail with 72 InvalidOptions.
denormd::expected<std::shared_ptr<const update_plan>> parse_pipeline_update_plan(
    const denormd::bson::array& stages, const denormd::bson::document* let = nullptr);

}  // namespace mongo_emulator::engine
