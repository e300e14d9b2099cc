#pragma once
// The aggregation stages mongo-emulator runs over in-memory documents: $match, $sort, $skip,
// $limit, $project, $addFields/$set, $unset, $replaceRoot/$replaceWith, $unwind, $group
// (_id expression; $sum $avg $min $max $first $last $push $addToSet $count), $count, $sample
// (uniformly random, in random order), and $documents first in an {aggregate: 1} pipeline
// (documents_stage).
// Other MongoDB stages fail to parse with code 2 (unknown names: 40324, as MongoDB).
// Lifecycle: parsed once, immutable; copies share state; safe to use from several threads.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class pipeline_stage {
 public:
  // One stage, {$name: argument}; `let`: the command's variables (evaluate_let).
  static denormd::expected<pipeline_stage> parse(const denormd::bson::value& spec,
                                                 const denormd::bson::document* let = nullptr);

  const std::string& name() const;
  // A stage that maps each document on its own ($match, $project, $addFields, $set, $unset,
  // $replaceRoot, $replaceWith): usable on a stream such as change events.
  bool is_streaming() const;
  // Streaming stages only: the document after the stage, or nullopt when $match drops it.
  // Expressions may throw expression_error (see expression.h), as run() may.
  denormd::expected<std::optional<denormd::bson::document>> transform(
      denormd::bson::document doc) const;
  denormd::expected<std::vector<denormd::bson::document>> run(
      std::vector<denormd::bson::document> docs) const;

  struct impl;

 private:
  std::shared_ptr<const impl> impl_;
};

using stage_list = std::vector<pipeline_stage>;

// The $documents stage of an {aggregate: 1} pipeline (MongoDB 5.1+, first stage only): its
// expression, evaluated once with no document, must give an array (5858203, "an array is
// expected", as the $unwind MongoDB desugars it into says), each element a document (40228, as
// its $replaceWith says). The documents are then the rest of the pipeline's input.
denormd::expected<std::vector<denormd::bson::document>> documents_stage(
    const denormd::bson::value& spec, const denormd::bson::document* let = nullptr);

denormd::expected<stage_list> parse_pipeline(const denormd::bson::array& stages,
                                             const denormd::bson::document* let = nullptr);
denormd::expected<std::vector<denormd::bson::document>> run_pipeline(
    const stage_list& stages, std::vector<denormd::bson::document> input);

}  // namespace mongo_emulator::engine
