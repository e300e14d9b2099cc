#pragma once
// What a store reports of the children on which an aggregate's expression fails, and what an
// aggregation needs to leave their values out (aggregate_kind::pipeline). A value type.

#include <string>

#include "bson/value.h"
#include "mapping/fwd.h"

namespace denormd::mapping {

// A child on which an aggregate's expression fails (the server refuses a $group that reads
// it): which expression, the child as the expression read it (computed_fields::input), the
// key of its parent and the server's error.
struct failing_child {
  std::string expression;  // computed_expression::key()
  bson::document input;
  // An aggregation expression true while the child is as `input` says
  // (computed_fields::same_input): a child changed since is evaluated again.
  bson::document unchanged;
  bson::value parent_key;
  std::string error;
  // The dead-letter reason for it, naming the mapping, the parent and the child.
  std::string reason(const mapping& m) const;
};

}  // namespace denormd::mapping
