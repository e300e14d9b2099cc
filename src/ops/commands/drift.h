#pragma once
// What `denormd verify` adds to the kinds' own checks (copy_kind::check, recent_kind::check):
// narrowing a repair to one dependent, and ordering keys as MongoDB compares them. Pure; safe
// to call from any thread. (The tests of the kinds' checks live in drift_test.cc.)

#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mapping/write_op.h"

namespace denormd::ops {

// Narrows a planned update to the one dependent whose _id is `id`, so that a repair touches
// only what verify found (the rest of the planner's filter still applies).
void narrow_to(mapping::write_op& op, const bson::value& id);

// Orders values as MongoDB compares them (5 and 5.0 are one key), for lookups by key.
using bson::value_less;

}  // namespace denormd::ops
