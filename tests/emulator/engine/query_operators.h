#pragma once
// The test server's query language: the production matcher (the mapping language) extended
// with the operators only the test server needs ($nor $elemMatch $size $type $all $expr $regex,
// and regexes in $in/$nin/$all/$not: query_regex.h), and the positional index the `$` update
// operator addresses. MongoDB operators it lacks ($mod $where $text $jsonSchema, geo, bitwise)
// fail with 238 rather than as unknown. Production code never compiles these.
// Functions are pure and thread-safe; compiled matchers are immutable and shareable.

#include <cstddef>
#include <optional>

#include "bson/value.h"
#include "common/expected.h"
#include "query/matcher.h"

namespace mongo_emulator::engine {

// Compiles a find/update/delete/$match filter with every operator the test server supports,
// $expr included; `let`: the command's variables (evaluate_let), which $expr reads as `$$name`.
// The matcher's filter() is the filter as compiled: regex matches MongoDB parses are rewritten
// into operators the matcher's hook sees (a copy is made only when the filter holds a regex).
denormd::expected<denormd::query::matcher, denormd::query::compile_error> compile_query(
    const denormd::bson::document& filter, const denormd::bson::document* let = nullptr);

// For a document `m` matches (compiled by compile_query): the index of the array element that
// made the first array-traversing predicate match, in filter order, as MongoDB's positional
// `$` uses it; nullopt when no predicate went through an array.
std::optional<std::size_t> positional_index(const denormd::query::matcher& m,
                                            const denormd::bson::document& doc);

}  // namespace mongo_emulator::engine
