#pragma once
// MongoDB's update semantics for mongo-emulator, as pure functions over bson::document:
// parse an update (operators, or a replacement document) and its arrayFilters, apply it to a
// document, and report the change stream `updateDescription` MongoDB 6.0 would produce, plus
// the document an upsert inserts. Error codes and messages are MongoDB's.
//
// Known deviations: a
// seeded upsert document keeps the query's field order (MongoDB's is hash order); no 16 MB or
// nesting-depth checks (the server checks sizes); no collation; $currentDate's timestamp is the
// caller's update_context::now_timestamp (MongoDB uses the cluster time).

#include <memory>
#include <optional>
#include <vector>

#include "bson/value.h"
#include "change_diff.h"
#include "common/expected.h"
#include "query/matcher.h"
#include "update_applier.h"
#include "update_plan.h"

namespace mongo_emulator::engine {

// A parsed, validated update. Immutable; copies share the parsed form; safe to use from
// several threads at once.
class update_spec {
 public:
  bool is_replacement() const { return plan_->replacement; }
  bool is_pipeline() const { return plan_->pipeline.has_value(); }
  // The replacement document (replacement specs only).
  const denormd::bson::document& replacement() const { return plan_->replacement_document; }
  // The update uses the positional `$` operator: callers must pass update_context::positional
  // (MongoDB fails the update with code 2 when the query matched no array element).
  bool uses_positional() const { return plan_->uses_positional; }
  const update_plan& plan() const { return *plan_; }

 private:
  friend denormd::expected<update_spec> parse_update(
      const denormd::bson::document& update,
      const std::vector<denormd::bson::document>& array_filters);
  friend denormd::expected<update_spec> parse_pipeline_update(const denormd::bson::array& stages,
                                                              const denormd::bson::document* let);
  explicit update_spec(std::shared_ptr<const update_plan> plan) : plan_(std::move(plan)) {}

  std::shared_ptr<const update_plan> plan_;
};

// MongoDB's storage check of an `_id` value: not an array, regex or undefined (53
// InvalidIdField), and, when a document, none of its own field names `$`-prefixed (52
// DollarPrefixedFieldName, as 6.0 checks; 7.1+ also checks deeper levels).
denormd::status validate_id(const denormd::bson::value& id);

// Parses an operator update ({$set: ...}) or a replacement document (first field not `$`,
// or empty), with the update's arrayFilters. Validates everything MongoDB validates before
// touching a document. (A replacement's own contents are checked when applied, as MongoDB
// does; `multi: true` with a replacement is the caller's check: code 9 "multi update is not
// supported for replacement-style update".)
denormd::expected<update_spec> parse_update(
    const denormd::bson::document& update,
    const std::vector<denormd::bson::document>& array_filters);

// Parses a pipeline-style update (`u` an array of stages). Applied, the pipeline's output
// replaces the document (`_id` kept when the output has none, error 66 when it changed) and the
// change is described by diffing the old and new document, as MongoDB's PipelineExecutor does:
// `replaced` when that diff is not smaller than the new document.
// `let`: the command's variables (evaluate_let).
denormd::expected<update_spec> parse_pipeline_update(const denormd::bson::array& stages,
                                                     const denormd::bson::document* let = nullptr);

// Applies `spec` to `doc`. On success `doc` holds the result and the description says what
// changed (empty: nothing did, so no event and nModified 0; `replaced`: a replacement changed
// the document, reported as a `replace` event). On error `doc` is untouched.
denormd::expected<update_description> apply_update(const update_spec& spec,
                                                   denormd::bson::document& doc,
                                                   const update_context& ctx);
// The same, reading `doc` without changing it: on a change `out` receives the result. Saves the
// caller's copy when `doc` is shared and immutable (the server's stored documents).
denormd::expected<update_description> apply_update(const update_spec& spec,
                                                   const denormd::bson::document& doc,
                                                   denormd::bson::document& out,
                                                   const update_context& ctx);

// The document an upsert starts from: the query's equality predicates (`a: v`, `{$eq: v}`,
// one-element `$in`/`$all`, inside `$and` and one-branch `$or`), dotted paths as nested
// documents, `_id` included when the query has it. Conflicting paths are skipped.
denormd::bson::document seed_upsert(const denormd::query::matcher& query);

// The whole document an upsert inserts, as MongoDB builds it: the seed (for a replacement only
// the query's `_id`), the update (or pipeline) applied with `inserting` set, `_id` first, and
// `new_id` used when neither the query nor the update gave an `_id`. Errors: 54 (two predicates on
// one path), 55, 66, 52, 53, and any error applying the update.
denormd::expected<denormd::bson::document> make_upsert_document(
    const update_spec& spec, const denormd::query::matcher& query,
    const denormd::bson::value& new_id, const update_context& ctx = {});

}  // namespace mongo_emulator::engine
