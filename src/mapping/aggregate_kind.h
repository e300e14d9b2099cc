#pragma once
// The `aggregate` kind, the computed pattern: a parent keeps values computed from its
// children ($count, $sum, $avg, $min, $max over a child path, with MongoDB $group semantics).
// In "recompute" mode a batch's events name the parents they touch and the completion
// recomputes those parents with one aggregation per chunk of parents, so a replayed batch
// writes the same values again. In "incremental" mode each event is a delta to its parents,
// applied by a pipeline update that skips the events the parent has already seen (each parent
// keeps the position of the last one). Members as in copy_kind.h (docs/architecture.md,
// "Mapping kinds" and "The aggregate kind"); a plain value, immutable once read. The modes
// live in files of their own: aggregate_kind.cc (reading, describing, recompute mode) and
// aggregate_incremental.cc, sharing aggregate_detail.h.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "mapping/failing_child.h"
#include "mapping/fwd.h"
#include "mapping/partition_route.h"
#include "query/matcher.h"

namespace denormd::mapping {

enum class accumulator_op { count, sum, avg, min, max };

// One computed field: `name` (under `into`) is `op` over the children's `path` ("" for count).
// A computed argument (`computed` set) is an expression the server evaluates in $group, and on
// each event's documents (its value at `path`, computed_expression::value_path).
struct accumulator {
  std::string name;
  accumulator_op op = accumulator_op::count;
  std::string path;
  std::shared_ptr<const computed_expression> computed;
};

enum class aggregate_mode { recompute, incremental };

// Incremental mode: a running value a parent keeps, and what each counted child adds to it.
enum class slot_role {
  count,          // 1 per child ($count; the count of an $avg)
  value,          // the child's value when it is a number ($sum; the sum of an $avg)
  numeric_count,  // 1 per child whose value is a number (the divisor of an $avg)
  // 1 per child whose value is an int64, a double, a decimal: the type $group's $sum gives
  // depends on them (docs/architecture.md, "Running sums keep $group's type")
  long_count,
  double_count,
  decimal_count
};
struct value_slot {
  std::size_t accumulator = 0;
  slot_role role = slot_role::count;
  std::string path;  // in the parent
};

// The results of a recompute's $group by parent key, in BSON order, so 1 and 1.0 are one key
// as $group makes them. Views into the results it was built from.
class group_index {
 public:
  explicit group_index(const std::vector<bson::document>& groups);
  // The group of `key`, or nullptr when no child counts for it.
  const bson::document* find(const bson::value& key) const;

 private:
  std::map<const bson::value*, const bson::document*, bson::value_less> by_key_;
};

struct aggregate_kind {
  static constexpr std::string_view name = "aggregate";
  // Parents recomputed by one aggregation (and found by one query): bounds the $in list and
  // the results held at once.
  static constexpr std::size_t chunk = 1000;

  std::string parent_key;            // child field holding the parent's key
  std::string parent_field = "_id";  // parent field that parent_key refers to
  std::optional<query::matcher> filter;
  std::vector<accumulator> accumulators;  // in the order of "fields"
  aggregate_mode mode = aggregate_mode::recompute;
  // Incremental mode (set by prepare): the running values, and the parent's bookkeeping
  // ("<into>._denormd": the position of the last event applied, and each $avg's sum and count).
  std::vector<value_slot> slots;
  std::string state;

  // Reading (see copy_kind). "fields" holds accumulators, not paths: the kind reads it.
  static std::set<std::string> keys(std::string_view object);
  static const std::vector<std::pair<std::string, delete_policy>>& delete_policies();
  static delete_policy default_delete_policy();
  static constexpr bool into_required = false;
  static constexpr bool reads_own_fields = true;
  static constexpr std::string_view written_pointer = "/fields";
  void read_source(spec_reader& r, spec_object& source);
  void read_target(spec_reader& r, spec_object& target);
  void read_fields(spec_reader& r, spec_object& root, mapping& m);
  void read_rest(spec_reader& r, spec_object& root, const mapping& m);
  void prepare(const mapping& m);

  // The field's place in the parent ("rating.count", or "count" without `into`).
  std::string target_path(const mapping& m, std::string_view field) const;
  std::vector<std::string> written_paths(const mapping& m) const;
  void add_watched_paths(const mapping& m, std::vector<std::string>& out) const;
  std::vector<std::string> key_paths() const { return {}; }
  std::vector<std::string> fill_paths() const;
  // What plan_new_target reads of a parent besides fill_paths (which an update must touch):
  // in incremental mode, the position it holds.
  std::vector<std::string> new_target_reads() const;
  // The source's change stream must carry the child's state before each change: a delete,
  // or an update that moves a child, names its old parent only there. A delta also needs the
  // state right after the change (updateLookup may show a later one).
  stream_images needs_images() const { return {true, mode == aggregate_mode::incremental}; }
  // Incremental mode: a replaced parent is told from the kind's own write by the position it
  // held before (plan_new_target), so the parents' stream needs pre-images too.
  stream_images target_needs_images() const { return {mode == aggregate_mode::incremental, false}; }
  // Incremental mode: where a parent keeps the position of the last event applied to it.
  std::string position_path() const { return state + ".at"; }

  // Planning.
  stream_route route() const;
  void plan(const mapping& m, const std::vector<std::string>& watched, const change_event& ev,
            std::vector<write_op>& out, std::vector<std::string>* notes,
            const key_share& share) const;
  void plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                       const change_event& ev, std::vector<write_op>& out) const;
  // Completes a recompute: reads the parents the op selects, aggregates their children a
  // chunk at a time, and sets each parent whose values differ. False when the store failed.
  bool complete(const mapping& m, const write_op& op, document_store& store) const;
  // The same in incremental mode: the aggregation reads a snapshot, and each parent gets its
  // values and the snapshot's position unless it has applied a later event, in which case it
  // is recomputed again.
  bool complete_incremental(const mapping& m, const write_op& op, document_store& store) const;
  // Recompute mode: aggregates the children of `parents` (each with its key) and writes those
  // whose values differ, again until current with `recheck`. False when the store failed.
  // `failing`: children whose values are left out (pipeline).
  bool recompute_parents(
      const mapping& m, const write_op& op, bool recheck,
      std::span<const std::pair<const bson::document*, const bson::value*>> parents,
      document_store& store, std::span<const failing_child> failing = {}) const;
  // After a refusal of an aggregation over the children of `keys` (store.refusal()): adds to
  // `failing` the children on which an expression fails now and stores a dead letter for each
  // one new there; the aggregation can be run again leaving their values out. False when none
  // was found or the store failed (the refusal stands).
  static bool find_failing(const mapping& m, const write_op& op, const bson::array& keys,
                           document_store& store, std::vector<failing_child>& failing);
  // How many failing children one chunk of parents may have before it is given up (its
  // parents then are dead letters), and how many rounds of finding them it takes at most.
  static constexpr std::size_t max_failing_children = 1000;
  static constexpr int max_failing_rounds = 4;
  // The same for consecutive recomputes, one after the other.
  bool complete(const mapping& m, std::span<const write_op* const> ops,
                document_store& store) const;
  // Merging a batch's ops (the coalescer decides which and where). Recomputes of the mapping
  // merge into one over the union of their parents, or over every parent when one of them
  // is (merge_rule::recompute); type checks into the last one (merge_rule::retype); one
  // parent's deltas into one statement (merge_rule::delta). finish() rebuilds the statement,
  // each parent key once (by MongoDB equality: 1, 1L and 1.0 are one parent).
  void absorb(const mapping& m, write_op& into, write_op&& other) const;
  void finish(const mapping& m, write_op&& op, std::vector<write_op>& out) const;
  // What `plan` shows of a recompute: where its children are read from.
  void explain(const mapping& m, const write_op& op, bson::document& out) const;

  // Incremental mode: the update that applies `d` to its parent (merge_rule::delta), and its
  // pipeline, which adds the deltas of the events after the parent's position.
  write_op deltas(const mapping& m, delta_items d) const;
  bson::array delta_pipeline(const mapping& m, const delta_items& d) const;
  // The delta pipeline's later stages: int64 sums narrowed to int32 where $group would give
  // one (for the value slots `changed` marks), and the averages from their sums and counts.
  // Empty when there is nothing to set.
  bson::document narrowed_sums(const std::vector<bool>& changed) const;
  bson::document averages_of(const mapping& m) const;

  // A recompute of the parents whose parent field holds one of `keys`; with no keys, of
  // every parent (used when an event does not say which parent it left).
  write_op recompute(const mapping& m, bson::array keys) const;
  // Planning for a whole namespace, by recomputing (not incremental).
  void plan_recompute(const mapping& m, const std::vector<std::string>& watched,
                      const change_event& ev, std::vector<write_op>& out,
                      std::vector<std::string>* notes) const;
  // Of out[first..], what partition `share` writes: deltas and recomputes of its own parents,
  // recomputes of unknown parents narrowed to its own.
  void keep_own(const mapping& m, const key_share& share, std::vector<write_op>& out,
                std::size_t first) const;
  // Incremental mode: a recompute of those of the parents with `keys` whose running sum has
  // a type that no child gives it any more (a double or a decimal left), planned where a
  // delta takes one out (merge_rule::retype).
  write_op retype(const mapping& m, bson::array keys) const;
  // The slot of `role` for accumulator `i`, or nullptr.
  const value_slot* slot_of(std::size_t i, slot_role role) const;
  // A recompute of the parents `parents` selects (backfill, verify --repair, a new parent).
  write_op recompute_selected(const mapping& m, bson::document parents, bool recheck) const;
  // The aggregation over the children of the parents whose keys are `keys`: $match on the
  // keys and the filter, then $group by parent key. An accumulator's expression leaves out its
  // value for each of `failing` (the child as it was when the expression failed on it), as
  // the deltas and every other reader leave a value that fails out.
  bson::array pipeline(const bson::array& keys, std::span<const failing_child> failing = {}) const;
  // Its $match: the children of the parents whose keys are `keys`, within the filter.
  bson::document children_match(const bson::array& keys) const;
  // The values a parent should hold, from its $group result (nullptr: no matching child):
  // {$set, $unset} as an update, and the expected values by target path.
  bson::document update_for(const mapping& m, const bson::document* group) const;
  // Incremental mode: the same plus the running values and the position `at`.
  bson::document update_for(const mapping& m, const bson::document* group,
                            const bson::document& at) const;
  // The target paths of a parent that differ from what `group` says they should be.
  std::vector<std::string> check(const mapping& m, const bson::document& parent,
                                 const bson::document* group) const;

  // Describing.
  void describe(const mapping& m, std::string& out) const;
  void indexes(const mapping& m, std::vector<index_need>& out) const;
  void warnings(const mapping& m, std::vector<std::string>& out) const;
  void fingerprint(std::string& out) const;
};

// "$count", "$sum"... for messages and plans.
std::string_view accumulator_name(accumulator_op op);

}  // namespace denormd::mapping
