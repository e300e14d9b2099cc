#pragma once
// A planned write: what the writer sends to MongoDB for one mapping. Plain value.

#include <optional>
#include <string>

#include "bson/value.h"
#include "mapping/mapping.h"

namespace denormd::mapping {

enum class write_kind {
  update_one,
  update_many,
  refill,  // read the children, then set the parent's whole recent array
  fill,    // read one source document, then set the copies of one new target
};

// For a refill: the children query run once per parent matched by write_op::filter.
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

// How the batch step may combine this op with others of the same mapping.
enum class merge_rule {
  none,
  last_wins,       // copy: a later op with the same key replaces this one
  push,            // recent insert: later pushes to the same parent merge into this one
  parent_barrier,  // recent: later pushes to this parent must not merge across it
  mapping_barrier  // recent: touches unknown parents; no push of the mapping merges across
};

struct write_op {
  const mapping* source_mapping = nullptr;
  write_kind kind = write_kind::update_many;
  ns target;
  bson::document filter;
  bson::document update;
  bson::array array_filters;
  bool upsert = false;
  std::optional<refill_query> refill;
  std::optional<fill_query> fill;
  std::optional<push_items> push;
  merge_rule merge = merge_rule::none;
  bson::value merge_key;  // source key (copy) or parent key (recent)

  // Set by whoever plans a batch: the index of the (last) event this op came from, and the
  // wall time of the earliest one (for apply latency). The planner leaves them 0.
  std::size_t event = 0;
  std::int64_t event_ms = 0;
};

// A refill's children query for one parent key: {parentKey: key} and the mapping's filter,
// joined with $and only when both name the parent key.
bson::document children_filter(const refill_query& r, const bson::value& key);

// One line of `denormd plan` output (relaxed Extended JSON).
std::string to_plan_json(const write_op& op);
std::string_view kind_name(write_kind k);

}  // namespace denormd::mapping
