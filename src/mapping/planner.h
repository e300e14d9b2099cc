#pragma once
// The planner: (mappings, change event) -> write operations. Pure: no I/O, no clock, no
// driver. Built once from the loaded mappings; const afterwards and safe to share.

#include <map>
#include <string>
#include <vector>

#include "mapping/change_event.h"
#include "mapping/mapping.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

class planner {
 public:
  explicit planner(std::vector<mapping> mappings);
  planner(const planner&) = delete;  // ops point into mappings_
  planner& operator=(const planner&) = delete;

  const std::vector<mapping>& mappings() const { return mappings_; }
  // Every namespace some mapping reads as a source, in order.
  std::vector<ns> source_namespaces() const;
  // Every namespace to watch: the sources, plus the targets of fillNewTargets mappings.
  std::vector<ns> watched_namespaces() const;
  // The top-level fields of a source document that any mapping reading `source` needs
  // (for change_event::parse_bson). Empty when no mapping reads it.
  const std::vector<std::string>& document_fields(const ns& source) const;

  // Appends the writes one event needs. `notes` (optional) receives the reason an event
  // produced nothing where that is surprising (a key that cannot be known, for example).
  void plan(const change_event& ev, std::vector<write_op>& out,
            std::vector<std::string>* notes = nullptr) const;

  // The element a recent mapping keeps for one child document (fields absent in the child
  // are left out). The writer's refill builds elements with it too.
  static bson::document make_element(const mapping& m, const bson::document& child);
  // The children's sort (source paths) for a recent mapping's refill.
  static bson::document child_sort(const mapping& m);
  // A copy mapping's update for one source document ($set of present fields, $unset of the
  // missing ones); nullptr unsets every copy. The writer's fill uses it too.
  static bson::document copy_update(const mapping& m, const bson::document* source);

 private:
  // What the planner derives from a mapping once instead of per event.
  struct compiled {
    const mapping* m;
    std::vector<std::string> watched;       // paths whose change matters
    std::vector<std::string> parent;        // recent: {parent_key}
    std::vector<std::string> sort_paths;    // recent: source paths of the sort keys
    std::vector<std::string> target_paths;  // copy: m.target_path() of each field
  };
  struct source_plan {
    std::vector<compiled> mappings;   // mappings reading this namespace as their source
    std::vector<compiled> fills;      // fillNewTargets mappings whose target this is
    std::vector<std::string> fields;  // top-level fields any of them reads
  };

  void plan_copy(const compiled& c, const change_event& ev, std::vector<write_op>& out,
                 std::vector<std::string>* notes) const;
  void plan_recent(const compiled& c, const change_event& ev, std::vector<write_op>& out) const;
  void plan_fill(const compiled& c, const change_event& ev, std::vector<write_op>& out) const;

  std::vector<mapping> mappings_;
  std::map<ns, source_plan> by_source_;
};

// Builds the op(s) for a push of one or more elements to one parent: a single element is a
// guarded $push; several are a $pull of their ids followed by one $push, so a replayed batch
// neither duplicates an element nor drops one.
void append_push_ops(const mapping& m, bson::value parent, bson::array ids, bson::array elements,
                     std::vector<write_op>& out);
// The $each array of a push op built by append_push_ops.
bson::array& pushed_elements(write_op& push);

// A refill of a recent mapping: rebuild the array of every parent matched by `parents`
// from the children (the writer runs it; backfill and verify --repair issue it too).
write_op make_refill(const mapping& m, bson::document parents,
                     merge_rule rule = merge_rule::mapping_barrier, bson::value key = {});

// Sets `value` at a dotted path, creating sub-documents as needed.
void set_path(bson::document& doc, std::string_view dotted, bson::value v);

}  // namespace denormd::mapping
