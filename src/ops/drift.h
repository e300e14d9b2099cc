#pragma once
// The pure checks behind `denormd verify`: how one dependent differs from what its sources
// say, with the planner's semantics (copies equal the source's current values and are
// absent where the source lacks them; a recent array equals the children's first `limit`
// elements as planner::make_element builds them). No I/O; safe to call from any thread.

#include <functional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mapping/write_op.h"

namespace denormd::ops {

// The source document whose key is `key`, or nullptr when there is none.
using source_lookup = std::function<const bson::document*(const bson::value& key)>;

struct copy_finding {
  std::vector<std::string> paths;         // target paths that differ from the source
  std::vector<bson::value> drifted_keys;  // source keys whose copies differ (one repair each)
  std::vector<bson::value> missing_keys;  // referenced keys with no source document
};

// The source keys one copy target references: its `target.key`, or the key of each element
// of `target.array` (equal keys once, in element order). Missing and null keys are left out:
// no event ever writes those.
std::vector<bson::value> referenced_keys(const mapping::mapping& m, const bson::document& target);

// Compares a copy target with its sources. Where the source is gone, the copies are checked
// only under onSourceDelete "unset" (they must be absent); under "keep" anything goes.
copy_finding check_copy(const mapping::mapping& m, const bson::document& target,
                        const source_lookup& source);

// The paths of a parent's recent array that differ from `expected` ("recentReviews.3"), or
// the array itself when it is not one. A missing array counts as an empty one.
std::vector<std::string> check_recent(const mapping::mapping& m, const bson::document& parent,
                                      const bson::array& expected);

// Narrows a planned write to the one dependent whose _id is `id`, so that a repair touches
// only what verify found (the rest of the planner's filter still applies).
void narrow_to(mapping::write_op& op, const bson::value& id);

// A refill of every parent that `parents` matches, executed by the writer (the same op the
// planner builds for a recent delete under pullAndRefill).
mapping::write_op refill_for(const mapping::mapping& m, bson::document parents);

// Orders values as MongoDB compares them (5 and 5.0 are one key), for lookups by key.
struct value_less {
  bool operator()(const bson::value& a, const bson::value& b) const;
};

}  // namespace denormd::ops
