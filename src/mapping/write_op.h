#pragma once
// A planned write: what the writer sends to MongoDB for one mapping. Plain value.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"

namespace denormd::mapping {

// For a refill: the children query run once per parent the refill selects.
struct refill_query {
  ns source;
  bson::document filter;     // the mapping's filter; the writer adds {parentKey: <parent key>}
  std::string parent_key;    // child field
  std::string parent_field;  // parent field whose value the children reference
  bson::document sort;       // on child source paths
  int limit = 0;
};

// For a fill: the source document to copy from ({key_field: key} in `source`).
struct fill_query {
  ns source;
  std::string key_field;
  bson::value key;
};

// What a recent-items push adds, kept beside its update so a batch can merge several into
// one (the elements themselves live only in the update's $each).
struct push_items {
  bson::value parent;
  bson::array ids;
};

// One event's change to one parent's computed values (aggregate, incremental mode): `terms`
// add (or subtract) a child's value to a value slot, and `at` is the event's position, which
// the parent keeps so that an event it has seen is not applied again.
struct delta_term {
  std::size_t slot = 0;
  bson::value value;
  bool subtract = false;
};
struct child_delta {
  bson::document at;
  std::vector<delta_term> terms;
};
// What an incremental update applies, kept beside its statement so a batch can merge the
// deltas of one parent into one statement (the statement is rebuilt from them).
struct delta_items {
  bson::value parent;
  std::vector<child_delta> events;  // in stream order
};

// How the batch step may combine this op with others of the same mapping.
enum class merge_rule {
  none,
  last_wins,        // copy: a later op with the same key replaces this one
  push,             // recent insert: later pushes to the same parent merge into this one
  parent_barrier,   // recent: later pushes to this parent must not merge across it
  mapping_barrier,  // recent: touches unknown parents; no push of the mapping merges across
  recompute,        // aggregate: every recompute of the mapping in a batch merges into one
  delta,            // aggregate, incremental: later deltas to the same parent merge into this one
  retype            // aggregate, incremental: one per mapping and batch, after its last delta
};

// The alternatives of a planned write, one per way it reaches the database.
// An update statement: updateOne, or updateMany with `many`.
struct update_write {
  bool many = false;
  bson::document filter;
  bson::document update;
  bson::array array_filters;
  bool upsert = false;
  std::optional<push_items> push;    // a recent push (merge_rule::push)
  bson::array pipeline;              // not empty: the update is this pipeline, not `update`
  std::optional<delta_items> delta;  // an incremental aggregate's deltas (merge_rule::delta)
};
// Read the children, then set each selected parent's whole recent array.
struct refill_write {
  bson::document parents;
  refill_query children;
  // Read the children again after writing, until they are what was written: set when the
  // source's own stream may push to these parents at the same time (backfill, re-sync).
  bool recheck = false;
};
// Aggregate the children of the selected parents, then set each parent's computed values.
struct recompute_write {
  bson::document parents;  // the parents to recompute ({} is every parent)
  bson::array keys;        // the parent keys `parents` selects by (merge_rule::recompute)
  // Aggregate again after writing, until the values are what was written: set when the
  // source's stream may recompute the same parents at the same time (backfill, re-sync).
  bool recheck = false;
};
// Read one source document, then set the copies of one new target.
struct fill_write {
  bson::document filter;
  bson::array array_filters;
  fill_query source;
  // Without a source, unset the copies (onSourceDelete "unset", or a key new to the target:
  // what it holds is another source's copy); otherwise leave them.
  bool unset_without_source = false;
};
// What a dead letter is about, when it is one document's field: the document's collection
// and _id (as read: it may be the bad value itself), and the field.
struct dead_letter_subject {
  std::string ns;
  std::optional<bson::value> id;
  std::string field;
};

// Write nothing: the event cannot be followed (`reason` says why); stored as a dead letter so
// that nothing is lost silently.
struct dead_letter_write {
  std::string reason;
  dead_letter_subject subject;
};

struct write_op {
  const mapping* source_mapping = nullptr;
  ns target;
  std::variant<update_write, refill_write, recompute_write, fill_write, dead_letter_write> what;
  merge_rule merge = merge_rule::none;
  bson::value merge_key;  // source key (copy) or parent key (recent)

  // Set by whoever plans a batch: the index of the (last) event this op came from, and the
  // wall time of the earliest one (for apply latency). The planner leaves them 0.
  std::size_t event = 0;
  std::int64_t event_ms = 0;

  template <class W>
  W* as() {
    return std::get_if<W>(&what);
  }
  template <class W>
  const W* as() const {
    return std::get_if<W>(&what);
  }
  // The documents it selects in `target` (an update's or fill's filter, a refill's parents);
  // nullptr for a dead letter.
  const bson::document* selector() const;
  // "updateOne", "updateMany", "refill", "recompute", "fill" or "deadLetter".
  std::string_view name() const;
};

// `match` and a mapping's own `where`/`filter` in one query, joined with $and only when they
// name a field in common.
bson::document with_filter(bson::document match, const bson::document& filter);

// A refill's children query for one parent key: {parentKey: key_match(key)} and the mapping's
// filter, joined with $and only when both name the parent key.
bson::document children_filter(const refill_query& r, const bson::value& key);

// A fill's source query: {key_field: key_match(key)}.
bson::document fill_filter(const fill_query& f);

// A write that is not made: the event names something that cannot be a reference.
write_op dead_letter_op(const mapping& m, std::string reason, dead_letter_subject subject = {});
// Appends a dead letter and returns true when `v` cannot be a reference.
bool refused(const mapping& m, const reference_site& at, const bson::value& v,
             std::vector<write_op>& out);

// Sets `value` at a dotted path, creating sub-documents as needed.
void set_path(bson::document& doc, std::string_view dotted, bson::value v);

// One line of `denormd plan` output (relaxed Extended JSON).
std::string to_plan_json(const write_op& op);

}  // namespace denormd::mapping
