#pragma once
// When the server refuses an aggregate's $group because one of its expressions fails on some
// children (a $toInt of "bad"), which children those are: the children of the parents in
// question are read a page at a time (only the fields the expressions read) and evaluated by
// computed_evaluator, which names the documents and expressions that fail. The aggregation is
// then run again leaving their values out (the kind's pipeline), so every other child
// still counts and the parent gets its values (docs/architecture.md, "Computed fields").
// The work is the parents' children, read once: only done after such a refusal. Stateless.

#include <cstddef>
#include <vector>

#include "mapping/failing_child.h"
#include "mapping/mapping.h"
#include "mongo/document_client.h"
#include "sink/computed_evaluator.h"

namespace denormd::sink {

// At most `limit` documents of `m`'s source that `filter` selects (the children of some
// parents) on which an expression of `m` fails, in _id order, each with its value at
// `parent_path`; reads through `conn`, evaluates with `eval`.
mongo::result<std::vector<mapping::failing_child>> find_failing_children(
    mongo::document_client& conn, computed_evaluator& eval, const mapping::mapping& m,
    const bson::document& filter, const std::string& parent_path, std::size_t limit);

}  // namespace denormd::sink
