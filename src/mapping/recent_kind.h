#pragma once
// The `recent` kind, the subset pattern: a parent keeps the first `limit` of its children by
// `sort`, each as a small element, in one array. Its completion is the refill. Members as in
// copy_kind.h (docs/architecture.md, "Mapping kinds"); a plain value, immutable once read.

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "mapping/fwd.h"
#include "mapping/partition_route.h"
#include "query/matcher.h"

namespace denormd::mapping {

struct sort_key {
  std::string name;  // a field name in `fields`
  int direction = 1;
};

struct recent_kind {
  static constexpr std::string_view name = "recent";

  std::string parent_key;            // child field holding the parent's key
  std::string parent_field = "_id";  // parent field that parent_key refers to
  std::optional<query::matcher> filter;
  std::string id_field;        // the name in `fields` that identifies an element (copies _id)
  std::vector<sort_key> sort;  // always ends with id_field as a tie-breaker
  int limit = 0;
  // Derived by prepare(): the children's source paths of the sort keys.
  std::vector<std::string> sort_paths;

  // Reading (see copy_kind).
  static std::set<std::string> keys(std::string_view object);
  static const std::vector<std::pair<std::string, delete_policy>>& delete_policies();
  static delete_policy default_delete_policy();
  static constexpr bool into_required = true;
  static constexpr bool reads_own_fields = false;
  static constexpr std::string_view written_pointer = "/into";
  void read_source(spec_reader& r, spec_object& source);
  void read_target(spec_reader& r, spec_object& target);
  void read_rest(spec_reader& r, spec_object& root, const mapping& m);
  void prepare(const mapping& m);

  std::vector<std::string> written_paths(const mapping& m) const;
  void add_watched_paths(const mapping& m, std::vector<std::string>& out) const;
  std::vector<std::string> key_paths() const { return {}; }
  std::vector<std::string> fill_paths() const;
  std::vector<std::string> new_target_reads() const { return {}; }
  stream_images needs_images() const { return {}; }
  stream_images target_needs_images() const { return {}; }

  // Planning.
  stream_route route() const;
  void plan(const mapping& m, const std::vector<std::string>& watched, const change_event& ev,
            std::vector<write_op>& out, std::vector<std::string>* notes,
            const key_share& share) const;
  void plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                       const change_event& ev, std::vector<write_op>& out) const;
  // Pushes to one parent merge (merge_rule::push): `into` takes `later`'s ids and elements,
  // and finish() makes them one push (see push()).
  void absorb(const mapping& m, write_op& into, write_op&& later) const;
  void finish(const mapping& m, write_op&& op, std::vector<write_op>& out) const;
  // Completes a refill: reads the parents the op selects and sets each one's whole array
  // from its children. False when the store failed.
  bool complete(const mapping& m, const write_op& op, document_store& store) const;
  // The same for consecutive refills, one after the other.
  bool complete(const mapping& m, std::span<const write_op* const> ops,
                document_store& store) const;
  // A refill carries its children query: `plan` shows nothing more.
  void explain(const mapping& m, const write_op& op, bson::document& out) const;

  // The element kept for one child (fields absent in the child are left out).
  bson::document element(const mapping& m, const bson::document& child) const;
  // The children's sort (source paths) for a refill.
  bson::document child_sort(const mapping& m) const;
  // A refill of every parent matched by `parents` (backfill and verify --repair issue it too).
  write_op refill(const mapping& m, bson::document parents, merge_rule rule,
                  bson::value key = {}) const;
  // The op(s) for a push of one or more elements to one parent: a single element is a
  // guarded $push; several are a $pull of their ids followed by one $push, so a replayed
  // batch neither duplicates an element nor drops one.
  void push(const mapping& m, bson::value parent, bson::array ids, bson::array elements,
            std::vector<write_op>& out) const;

  // The expected state (verify): the paths of a parent's array that differ from `expected`
  // (the children's first `limit` elements), or the array itself when it is not one; a
  // missing array counts as an empty one.
  std::vector<std::string> check(const mapping& m, const bson::document& parent,
                                 const bson::array& expected) const;
  // Under onSourceDelete "pull" the array holds what pull keeps, not the first `limit`
  // children: each element a current matching child, in the mapping's order, at most `limit`,
  // none twice. The ids of the children the array names, to compare it with those children
  // read again (check's `expected`); nullopt when it cannot be such an array at all (not an
  // array, too long, an element without a usable id, an id twice).
  std::optional<bson::array> held_ids(const mapping& m, const bson::document& parent) const;

  // Describing.
  void describe(const mapping& m, std::string& out) const;
  void indexes(const mapping& m, std::vector<index_need>& out) const;
  void warnings(const mapping& m, std::vector<std::string>& out) const;
  void fingerprint(std::string& out) const;
};

}  // namespace denormd::mapping
