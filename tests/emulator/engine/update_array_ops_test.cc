// $push (with $each, $position, $sort, $slice), $addToSet, $pull, $pullAll, $pop.
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_push, append_and_create) {
  const update_case cases[] = {
      {.name = "missing field becomes a new array",
       .before = R"({"_id": 1})",
       .update = R"({"$push": {"a": 1}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = R"({"updatedFields": {"a": [1]}})"},
      {.name = "missing nested field",
       .before = R"({"_id": 1})",
       .update = R"({"$push": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": {"b": [1]}})",
       .description = R"({"updatedFields": {"a": {"b": [1]}}})"},
      {.name = "append is reported as the new element",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$push": {"a": 2}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = R"({"updatedFields": {"a.1": 2}})"},
      {.name = "push onto an empty array reports the array",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$push": {"a": 1}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = R"({"updatedFields": {"a": [1]}})"},
      {.name = "an array value is one element",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$push": {"a": [2, 3]}})",
       .after = R"({"_id": 1, "a": [1, [2, 3]]})",
       .description = R"({"updatedFields": {"a.1": [2, 3]}})"},
      {.name = "$each appends each element",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$push": {"a": {"$each": [2, 3]}}})",
       .after = R"({"_id": 1, "a": [1, 2, 3]})",
       .description = R"({"updatedFields": {"a.1": 2, "a.2": 3}})"},
      {.name = "$each of nothing is a no-op",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$push": {"a": {"$each": []}}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = "noop"},
      {.name = "$each of nothing on a missing field creates an empty array",
       .before = R"({"_id": 1})",
       .update = R"({"$push": {"a": {"$each": []}}})",
       .after = R"({"_id": 1, "a": []})",
       .description = R"({"updatedFields": {"a": []}})"},
      {.name = "without $each, a document with modifier names is a value",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$push": {"a": {"$slice": 2}}})",
       .after = R"({"_id": 1, "a": [{"$slice": 2}]})"},
      {.name = "non-array field",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$push": {"a": 2}})",
       .code = 2,
       .message = "The field 'a' must be an array but is of type int in document {_id: 1}"},
      {.name = "non-array nested field names the whole path",
       .before = R"({"_id": "x", "a": {"b": {}}})",
       .update = R"({"$push": {"a.b": 2}})",
       .code = 2,
       .message = "The field 'a.b' must be an array but is of type object in document {_id: "
                  "\"x\"}"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_push, position_sort_slice) {
  const update_case cases[] = {
      {.name = "$position 0 inserts at the front",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": 0}}})",
       .after = R"({"_id": 1, "a": [9, 1, 2]})",
       .description = R"({"updatedFields": {"a": [9, 1, 2]}})"},
      {.name = "$position in the middle",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$push": {"a": {"$each": [8, 9], "$position": 1}}})",
       .after = R"({"_id": 1, "a": [1, 8, 9, 2, 3]})",
       .description = R"({"updatedFields": {"a": [1, 8, 9, 2, 3]}})"},
      {.name = "$position past the end appends",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": 5}}})",
       .after = R"({"_id": 1, "a": [1, 2, 9]})",
       .description = R"({"updatedFields": {"a.2": 9}})"},
      {.name = "$position equal to the size inserts (reported whole)",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": 2}}})",
       .after = R"({"_id": 1, "a": [1, 2, 9]})",
       .description = R"({"updatedFields": {"a": [1, 2, 9]}})"},
      {.name = "negative $position counts from the end",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": -1}}})",
       .after = R"({"_id": 1, "a": [1, 2, 9, 3]})"},
      {.name = "negative $position past the front inserts at the front",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": -5}}})",
       .after = R"({"_id": 1, "a": [9, 1, 2]})"},
      {.name = "$position as an integral double",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [9], "$position": 1.0}}})",
       .after = R"({"_id": 1, "a": [1, 9, 2]})"},
      {.name = "$sort 1",
       .before = R"({"_id": 1, "a": [3, 1]})",
       .update = R"({"$push": {"a": {"$each": [2], "$sort": 1}}})",
       .after = R"({"_id": 1, "a": [1, 2, 3]})",
       .description = R"({"updatedFields": {"a": [1, 2, 3]}})"},
      {.name = "$sort -1 across types",
       .before = R"({"_id": 1, "a": ["b", 3, null]})",
       .update = R"({"$push": {"a": {"$each": [{"x": 1}], "$sort": -1}}})",
       .after = R"({"_id": 1, "a": [{"x": 1}, "b", 3, null]})"},
      {.name = "$sort by a field; missing fields and non-documents sort as null",
       .before = R"({"_id": 1, "a": [{"s": 3}, 7, {"t": 1}, {"s": 1}]})",
       .update = R"({"$push": {"a": {"$each": [{"s": 2}], "$sort": {"s": 1}}}})",
       .after = R"({"_id": 1, "a": [7, {"t": 1}, {"s": 1}, {"s": 2}, {"s": 3}]})"},
      {.name = "$sort by a dotted field, descending, then a second key",
       .before =
           R"({"_id": 1, "a": [{"p": {"q": 1}, "r": 1}, {"p": {"q": 2}, "r": 1}, {"p": {"q": 2}, "r": 2}]})",
       .update = R"({"$push": {"a": {"$each": [], "$sort": {"p.q": -1, "r": 1}}}})",
       .after =
           R"({"_id": 1, "a": [{"p": {"q": 2}, "r": 1}, {"p": {"q": 2}, "r": 2}, {"p": {"q": 1}, "r": 1}]})",
       .description =
           R"({"updatedFields": {"a": [{"p": {"q": 2}, "r": 1}, {"p": {"q": 2}, "r": 2}, {"p": {"q": 1}, "r": 1}]}})"},
      {.name = "$sort always counts as a change, even of a sorted array",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [], "$sort": 1}}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = R"({"updatedFields": {"a": [1, 2]}})"},
      {.name = "$slice 0 empties",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [3], "$slice": 0}}})",
       .after = R"({"_id": 1, "a": []})",
       .description = R"({"updatedFields": {"a": []}})"},
      {.name = "$slice +N keeps the first N",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [3, 4], "$slice": 3}}})",
       .after = R"({"_id": 1, "a": [1, 2, 3]})",
       .description = R"({"updatedFields": {"a": [1, 2, 3]}})"},
      {.name = "$slice -N keeps the last N",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$push": {"a": {"$each": [3], "$slice": -2}}})",
       .after = R"({"_id": 1, "a": [2, 3]})",
       .description = R"({"updatedFields": {"a": [2, 3]}})"},
      {.name = "$slice that trims nothing leaves an append",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$push": {"a": {"$each": [2], "$slice": -5}}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = R"({"updatedFields": {"a.1": 2}})"},
      {.name = "position, then sort, then slice",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$push": {"a": {"$each": [0], "$position": 1, "$sort": -1, "$slice": 2}}})",
       .after = R"({"_id": 1, "a": [3, 2]})"},
      {.name = "modifier order does not matter",
       .before = R"({"_id": 1, "a": [3]})",
       .update = R"({"$push": {"a": {"$slice": 2, "$sort": 1, "$each": [5, 1]}}})",
       .after = R"({"_id": 1, "a": [1, 3]})",
       .description = R"({"updatedFields": {"a": [1, 3]}})"},
      {.name = "bounded recent-items push onto a missing field",
       .before = R"({"_id": 1})",
       .update =
           R"({"$push": {"r": {"$each": [{"t": 1}, {"t": 3}, {"t": 2}], "$sort": {"t": -1}, "$slice": 2}}})",
       .after = R"({"_id": 1, "r": [{"t": 3}, {"t": 2}]})",
       .description = R"({"updatedFields": {"r": [{"t": 3}, {"t": 2}]}})"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_push, validation) {
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$foo": 1}}})", "[]", 2,
                     "Unrecognized clause in $push: $foo");
  expect_parse_error(R"({"$push": {"a": {"$slice": 1, "$each": [1], "x": 1}}})", "[]", 2,
                     "Unrecognized clause in $push: x");
  expect_parse_error(R"({"$push": {"a": {"$each": 1}}})", "[]", 2,
                     "The argument to $each in $push must be an array but it was of type: int");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$slice": 1.5}}})", "[]", 2,
                     "The value for $slice must be an integer value but was given type: double");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$slice": "1"}}})", "[]", 2,
                     "The value for $slice must be an integer value but was given type: string");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$position": 0.5}}})", "[]", 2,
                     "The value for $position must be an integer value, not of type: double");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$sort": 2}}})", "[]", 2,
                     "The $sort element value must be either 1 or -1");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$sort": "x"}}})", "[]", 2,
                     "The $sort is invalid: use 1/-1 to sort the whole element, or "
                     "{field:1/-1} to sort embedded fields");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$sort": {}}}})", "[]", 2,
                     "The $sort pattern is empty when it should be a set of fields.");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$sort": {"x": 0}}}})", "[]", 2,
                     "The $sort element value must be either 1 or -1");
  expect_parse_error(R"({"$push": {"a": {"$each": [1], "$sort": {"x..y": 1}}}})", "[]", 2,
                     "The $sort field is a dotted field but has an empty part: x..y");
}

TEST(update_add_to_set, no_duplicates) {
  const update_case cases[] = {
      {.name = "missing field",
       .before = R"({"_id": 1})",
       .update = R"({"$addToSet": {"a": 1}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = R"({"updatedFields": {"a": [1]}})"},
      {.name = "new element is appended",
       .before = R"({"_id": 1, "a": [0]})",
       .update = R"({"$addToSet": {"a": 1}})",
       .after = R"({"_id": 1, "a": [0, 1]})",
       .description = R"({"updatedFields": {"a.1": 1}})"},
      {.name = "onto an empty array: still reported per element",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$addToSet": {"a": {"$each": [1, 2]}}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = R"({"updatedFields": {"a.0": 1, "a.1": 2}})"},
      {.name = "present element is a no-op",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$addToSet": {"a": 2}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = "noop"},
      {.name = "equality is by value across number types",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$addToSet": {"a": 1.0}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = "noop"},
      {.name = "documents with another field order are different",
       .before = R"({"_id": 1, "a": [{"x": 1, "y": 2}]})",
       .update = R"({"$addToSet": {"a": {"y": 2, "x": 1}}})",
       .after = R"({"_id": 1, "a": [{"x": 1, "y": 2}, {"y": 2, "x": 1}]})"},
      {.name = "$each adds only missing elements, once",
       .before = R"({"_id": 1, "a": [0, 0]})",
       .update = R"({"$addToSet": {"a": {"$each": [0, 1, 1, 2]}}})",
       .after = R"({"_id": 1, "a": [0, 0, 1, 2]})",
       .description = R"({"updatedFields": {"a.2": 1, "a.3": 2}})"},
      {.name = "a document not starting with $each is a value",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$addToSet": {"a": {"x": 1, "$each": [1]}}})",
       .after = R"({"_id": 1, "a": [{"x": 1, "$each": [1]}]})"},
      {.name = "non-array field",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$addToSet": {"a": 2}})",
       .code = 2,
       .message = "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type "
                  "int"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$addToSet": {"a": {"$each": 1}}})", "[]", 14,
                     "The argument to $each in $addToSet must be an array but it was of type int");
  expect_parse_error(R"({"$addToSet": {"a": {"$each": [1], "x": 1}}})", "[]", 2,
                     "Found unexpected fields after $each in $addToSet: { $each: [ 1 ], x: 1 }");
}

TEST(update_pull, conditions) {
  const update_case cases[] = {
      {.name = "scalar: equality, the array is reported whole",
       .before = R"({"_id": 1, "a": [1, 2, 1, 3]})",
       .update = R"({"$pull": {"a": 1}})",
       .after = R"({"_id": 1, "a": [2, 3]})",
       .description = R"({"updatedFields": {"a": [2, 3]}})"},
      {.name = "scalar equality across number types",
       .before = R"({"_id": 1, "a": [1, 1.0, {"$numberLong": "1"}, 2]})",
       .update = R"({"$pull": {"a": 1}})",
       .after = R"({"_id": 1, "a": [2]})"},
      {.name = "nothing to pull is a no-op",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$pull": {"a": 5}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = "noop"},
      {.name = "operator condition per element",
       .before = R"({"_id": 1, "a": [1, 5, 2, 8]})",
       .update = R"({"$pull": {"a": {"$gte": 5}}})",
       .after = R"({"_id": 1, "a": [1, 2]})"},
      {.name = "$in condition",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$pull": {"a": {"$in": [1, 3]}}})",
       .after = R"({"_id": 1, "a": [2]})"},
      {.name = "operator condition sees inside element arrays",
       .before = R"({"_id": 1, "a": [[1, 5], [1, 2]]})",
       .update = R"({"$pull": {"a": {"$gte": 5}}})",
       .after = R"({"_id": 1, "a": [[1, 2]]})"},
      {.name = "plain document is a query on document elements",
       .before = R"({"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2}, 3, {"x": 1}]})",
       .update = R"({"$pull": {"a": {"x": 1}}})",
       .after = R"({"_id": 1, "a": [{"x": 2}, 3]})"},
      {.name = "query with an operator inside",
       .before = R"({"_id": 1, "a": [{"x": 5}, {"x": 1}]})",
       .update = R"({"$pull": {"a": {"x": {"$gt": 2}}}})",
       .after = R"({"_id": 1, "a": [{"x": 1}]})"},
      {.name = "empty document pulls every document and no scalar",
       .before = R"({"_id": 1, "a": [1, {"x": 1}, {}, "s", [1]]})",
       .update = R"({"$pull": {"a": {}}})",
       .after = R"({"_id": 1, "a": [1, "s", [1]]})"},
      {.name = "array: exact equality",
       .before = R"({"_id": 1, "a": [[1, 2], [2, 1], 1, [1, 2, 3]]})",
       .update = R"({"$pull": {"a": [1, 2]}})",
       .after = R"({"_id": 1, "a": [[2, 1], 1, [1, 2, 3]]})"},
      {.name = "missing field is a no-op",
       .before = R"({"_id": 1})",
       .update = R"({"$pull": {"a": 1}})",
       .after = R"({"_id": 1})",
       .description = "noop"},
      {.name = "non-array field",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$pull": {"a": 1}})",
       .code = 2,
       .message = "Cannot apply $pull to a non-array value"},
      {.name = "path blocked by a scalar",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$pull": {"a.b": 1}})",
       .code = 28,
       .message = "Cannot use the part (b) of (a.b) to traverse the element ({a: 1})"},
      {.name = "nested missing path under a document is a no-op",
       .before = R"({"_id": 1, "a": {}})",
       .update = R"({"$pull": {"a.b.c": 1}})",
       .after = R"({"_id": 1, "a": {}})",
       .description = "noop"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$pull": {"a": {"$foo": 1}}})", "[]", 2, nullptr);
}

TEST(update_pull_all, values) {
  const update_case cases[] = {
      {.name = "removes every listed value",
       .before = R"({"_id": 1, "a": [1, 2, 1, 3, [1]]})",
       .update = R"({"$pullAll": {"a": [1, 3]}})",
       .after = R"({"_id": 1, "a": [2, [1]]})",
       .description = R"({"updatedFields": {"a": [2, [1]]}})"},
      {.name = "nothing listed present",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$pullAll": {"a": [5]}})",
       .after = R"({"_id": 1, "a": [1]})",
       .description = "noop"},
      {.name = "non-array field",
       .before = R"({"_id": 1, "a": "x"})",
       .update = R"({"$pullAll": {"a": [1]}})",
       .code = 2,
       .message = "Cannot apply $pull to a non-array value"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$pullAll": {"a": 1}})", "[]", 2,
                     "$pullAll requires an array argument but was given a int");
}

TEST(update_pop, ends) {
  const update_case cases[] = {
      {.name = "last",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$pop": {"a": 1}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = R"({"updatedFields": {"a": [1, 2]}})"},
      {.name = "first",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$pop": {"a": -1}})",
       .after = R"({"_id": 1, "a": [2, 3]})"},
      {.name = "empty array",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$pop": {"a": 1}})",
       .after = R"({"_id": 1, "a": []})",
       .description = "noop"},
      {.name = "missing",
       .before = R"({"_id": 1})",
       .update = R"({"$pop": {"a": 1}})",
       .after = R"({"_id": 1})",
       .description = "noop"},
      {.name = "non-array",
       .before = R"({"_id": 1, "a": {"b": 1}})",
       .update = R"({"$pop": {"a.b": 1}})",
       .code = 14,
       .message = "Path 'a.b' contains an element of non-array type 'int'"},
  };
  for (const auto& c : cases)
    run_case(c);
  expect_parse_error(R"({"$pop": {"a": 2}})", "[]", 9, "$pop expects 1 or -1, found: 2");
  expect_parse_error(R"({"$pop": {"a": "x"}})", "[]", 9, "Expected a number in: a: \"x\"");
  expect_parse_error(R"({"$pop": {"a": 1.5}})", "[]", 9, "Expected an integer: a: 1.5");
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
