#pragma once
// The write step's split of a batch: groups of planned ops that can be written at the same
// time, each in plan order, without changing the result. An op's unit is what it must stay
// ordered with: the source key of a copy update, the target of a fill, the parent of a recent
// push or an incremental delta. Ops of different units of one mapping commute, and ops of
// different mappings touch disjoint paths, so units are spread over the groups by a hash; a
// mapping with an op whose documents are not known in advance (a recompute, a refill or pull
// by child) keeps all of its ops of the batch in one group. Pure function.

#include <cstddef>
#include <vector>

#include "mapping/write_op.h"

namespace denormd::mapping {

// Reorders `ops` stably into `groups` contiguous groups and returns where each begins, with
// ops.size() last (groups + 1 entries; a group may be empty). `groups` >= 1.
std::vector<std::size_t> partition(std::vector<write_op>& ops, std::size_t groups);

}  // namespace denormd::mapping
