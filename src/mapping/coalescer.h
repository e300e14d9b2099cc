#pragma once
// The batch step: combines the ops planned for a batch of events without changing the
// result. Copy ops for one source document collapse to the last (each sets the copies to
// the document's latest state); pushes to one parent merge into one $push unless another op
// on that parent lies between them. Pure function.

#include <vector>

#include "mapping/write_op.h"

namespace denormd::mapping {

std::vector<write_op> coalesce(std::vector<write_op> ops);

}  // namespace denormd::mapping
