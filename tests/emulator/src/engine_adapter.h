#pragma once
// The server's single point of contact with the document engine (tests/emulator/engine):
// update application, upsert seeding, find projection and sort, and aggregation pipelines.
// Compiled objects are immutable and safe to share; functions are thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bson/value.h"
#include "collection.h"
#include "common/expected.h"
#include "query/matcher.h"

namespace mongo_emulator {

// A parsed `u` of an update statement (operators or a replacement) with its arrayFilters.
class prepared_update {
 public:
  static denormd::expected<prepared_update> parse(const bson::document& update,
                                                  const bson::array* array_filters);
  // A pipeline-style update (`u` an array of stages).
  static denormd::expected<prepared_update> parse_pipeline(const bson::array& stages,
                                                           const bson::document* let);
  bool is_replacement() const;

  struct result {
    bson::document doc;                 // the new document
    bson::document update_description;  // {updatedFields, removedFields, truncatedArrays}
    bool replaced = false;              // report a `replace` event rather than `update`
    bool changed = false;               // false for a no-op (no event, nModified unchanged)
  };
  // Applies to an existing document matched by `query` (positional `$` addresses the
  // element the query matched).
  denormd::expected<result> apply(const bson::document& doc,
                                  const denormd::query::matcher& query) const;
  // The document an upsert inserts: seeded from the query's equalities, then updated (with
  // $setOnInsert), with `_id` from the query or a new ObjectId.
  denormd::expected<bson::document> upsert(const denormd::query::matcher& query) const;

  struct impl;

 private:
  std::shared_ptr<const impl> impl_;
};

using projection_fn = std::function<bson::document(const bson::document&)>;
// find's `projection`; an empty spec projects nothing away (returns an empty function).
denormd::expected<projection_fn> compile_projection(const bson::document& spec,
                                                    const bson::document* let);

using sort_less = std::function<bool(const bson::document&, const bson::document&)>;
// find's `sort`; an empty spec gives an empty function.
denormd::expected<sort_less> compile_sort(const bson::document& spec);

// A stage after $changeStream ($match handled by the caller): $project, $addFields, ...
using event_transform =
    std::function<denormd::expected<std::optional<bson::document>>(bson::document)>;
denormd::expected<event_transform> compile_event_stage(const std::string& name,
                                                       const bson::value& spec,
                                                       const bson::document* let);

// A plain aggregation pipeline over documents. Commands' `let` variables are constants from
// engine::evaluate_let (nullptr: none); expressions may throw engine::expression_error.
denormd::expected<std::vector<bson::document>> run_pipeline(const bson::array& stages,
                                                            const std::vector<doc_ptr>& input,
                                                            const bson::document* let);

// An {aggregate: 1} pipeline whose first stage is $documents: that stage's documents through
// the other stages (engine::documents_stage).
denormd::expected<std::vector<bson::document>> run_documents_pipeline(const bson::array& stages,
                                                                      const bson::document* let);

}  // namespace mongo_emulator
