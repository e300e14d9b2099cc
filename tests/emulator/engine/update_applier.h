#pragma once
// Applies a parsed operator update to one document the way MongoDB's UpdateTreeExecutor does:
// sibling fields in path order, `$` merged with its matched field, `$[]`/`$[id]` per element,
// missing paths created (arrays padded with null), `_id` immutable, and every change logged
// into a change_diff. Lifecycle: one applier per document and update; works on the value it
// is given (the caller passes a copy and keeps it only on success). Not thread-safe.

#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "change_diff.h"
#include "common/expected.h"
#include "update_plan.h"

namespace mongo_emulator::engine {

struct update_context {
  // The array position the query's array predicate matched (positional_index in query_operators.h),
  // for the positional `$` operator.
  std::optional<std::size_t> positional;
  // This update builds an upsert's new document: $setOnInsert applies.
  bool inserting = false;
  // Clock for $currentDate; the system clock when unset.
  std::optional<denormd::bson::date_time> now;
  std::optional<denormd::bson::timestamp> now_timestamp;
};

class update_applier {
 public:
  // `root` holds the document being updated; `diff` may be null when no log is wanted.
  update_applier(denormd::bson::value& root, const update_plan& plan, const update_context& ctx,
                 change_diff* diff);

  // Applies the plan; returns whether anything changed.
  denormd::expected<bool> run();

 private:
  using group = std::vector<const update_node*>;
  struct location {
    runtime_path taken;                  // existing components
    std::vector<std::string> to_create;  // components that do not exist yet
  };

  denormd::bson::value* resolve(const runtime_path& path);
  denormd::expected<bool> apply_group(const group& nodes, location loc, bool logging);
  denormd::expected<bool> apply_object(const group& nodes, const location& loc, bool logging);
  denormd::expected<bool> apply_array(const group& nodes, const location& loc, bool logging);
  denormd::expected<bool> apply_child(const group& nodes, const std::string& field, location& loc,
                                      bool logging);
  denormd::expected<bool> apply_leaf(const modifier& mod, const location& loc, bool logging);
  denormd::expected<bool> apply_existing(const modifier& mod, const location& loc, bool logging);
  denormd::expected<bool> apply_missing(const modifier& mod, const location& loc, bool logging);
  denormd::expected<bool> apply_rename(const modifier& mod, const location& loc, bool logging);

  // createPathAt plus what ModifierNode does after creating: storage and `_id` checks, log.
  denormd::status create(const location& loc, denormd::bson::value v, bool logging);
  denormd::status check_not_immutable(const runtime_path& path) const;
  denormd::status check_mergeable(const group& nodes, const std::string& path) const;
  modifier_inputs inputs_for(const location& loc) const;
  std::string id_text() const;

  denormd::bson::value& root_;
  const update_plan& plan_;
  const update_context& ctx_;
  change_diff* diff_;
  denormd::bson::date_time now_;
  denormd::bson::timestamp now_timestamp_;
};

}  // namespace mongo_emulator::engine
