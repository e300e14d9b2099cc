#pragma once
// What the aggregate kind's two modes share (aggregate_kind.cc: reading, describing and the
// recompute mode; aggregate_incremental.cc: the incremental mode). Internal to those two
// files; pure, like the kind.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bson/value.h"
#include "mapping/aggregate_kind.h"
#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/mapping.h"
#include "mapping/write_op.h"

namespace denormd::mapping::aggregate_detail {

// The same BSON type and equal by BSON comparison (parent keys, child values).
bool same_value(const bson::value& a, const bson::value& b);

// The parent key of a child that counts for some parent: it passes the filter and holds a
// key that can be a reference. With `report`, a key that cannot be one is a dead letter.
std::optional<bson::value> counted_parent(const mapping& m, const aggregate_kind& k,
                                          const change_event& ev, const bson::document& child,
                                          bool report, std::vector<write_op>& out);

// Parent keys as MongoDB compares them: 1, 1L and 1.0 name one parent.
void add_key(bson::array& keys, const bson::value& key);

// Without a child's state before (or, in incremental mode, right after) a change, the parent
// it left (or joined) is unknown: every parent is recomputed.
void recompute_every_parent(const mapping& m, const aggregate_kind& k, const change_event& ev,
                            std::string_view image, std::string_view what,
                            std::vector<write_op>& out, std::vector<std::string>* notes);

// Incremental mode: the change to each parent's running values, as one delta per parent
// (aggregate_incremental.cc).
void plan_deltas(const mapping& m, const aggregate_kind& k, const std::vector<std::string>& watched,
                 const change_event& ev, std::vector<write_op>& out,
                 std::vector<std::string>* notes);

using parent_ref = std::pair<const bson::document*, const bson::value*>;  // a parent, its key

// The parents that can have children, with their keys.
std::vector<parent_ref> recomputable(const mapping& m, const aggregate_kind& k, const write_op& op,
                                     std::span<const bson::document> parents);

// Calls `each` with the parents the recompute selects, at most aggregate_kind::chunk at a
// time, read a page at a time in _id order: an every-parent recompute holds one page of
// parents, not all of them. False when the store failed or `each` returned false.
template <class Each>
bool for_each_parent_chunk(const write_op& op, document_store& store, read_options opts,
                           Each&& each) {
  const recompute_write& rw = std::get<recompute_write>(op.what);
  opts.sort = bson::document{{"_id", 1}};
  opts.limit = static_cast<int>(aggregate_kind::chunk);
  std::optional<bson::value> last;
  while (true) {
    const bson::document filter =
        last ? with_filter(after_key_filter(*last), rw.parents) : rw.parents;
    auto page = store.find(op.target, filter, opts);
    if (!page) return false;
    for (std::size_t start = 0; start < page->size(); start += aggregate_kind::chunk) {
      const std::size_t n = std::min(page->size() - start, aggregate_kind::chunk);
      if (!each(std::span<const bson::document>(page->data() + start, n))) return false;
    }
    const bson::value* id = page->empty() ? nullptr : page->back().get("_id");
    if (page->size() < aggregate_kind::chunk || id == nullptr) return true;
    last = *id;
  }
}

}  // namespace denormd::mapping::aggregate_detail
