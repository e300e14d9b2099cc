// $set, $unset, $setOnInsert and the path rules every operator shares.
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_set, paths_values_and_descriptions) {
  const update_case cases[] = {
      {.name = "new top-level field",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"a": 1}})",
       .after = R"({"_id": 1, "a": 1})",
       .description = R"({"updatedFields": {"a": 1}})"},
      {.name = "existing field",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {"a": 2}})",
       .after = R"({"_id": 1, "a": 2})",
       .description = R"({"updatedFields": {"a": 2}})"},
      {.name = "same value is a no-op",
       .before = R"({"_id": 1, "a": {"b": [1, 2]}})",
       .update = R"({"$set": {"a": {"b": [1, 2]}}})",
       .after = R"({"_id": 1, "a": {"b": [1, 2]}})",
       .description = "noop"},
      {.name = "same number of another type is a change",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {"a": 1.0}})",
       .after = R"({"_id": 1, "a": 1.0})",
       .description = R"({"updatedFields": {"a": 1.0}})"},
      {.name = "NaN over NaN is a no-op (bytes are compared)",
       .before = R"({"_id": 1, "a": {"$numberDouble": "NaN"}})",
       .update = R"({"$set": {"a": {"$numberDouble": "NaN"}}})",
       .after = R"({"_id": 1, "a": {"$numberDouble": "NaN"}})",
       .description = "noop"},
      {.name = "-0.0 over 0.0 is a change",
       .before = R"({"_id": 1, "a": 0.0})",
       .update = R"({"$set": {"a": -0.0}})",
       .after = R"({"_id": 1, "a": -0.0})",
       .description = R"({"updatedFields": {"a": -0.0}})"},
      {.name = "int64 value keeps its type",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"a": {"$numberLong": "5"}}})",
       .after = R"({"_id": 1, "a": {"$numberLong": "5"}})",
       .description = R"({"updatedFields": {"a": {"$numberLong": "5"}}})"},
      {.name = "dotted path creates intermediate documents, reported at the first new one",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"a.b.c": 1}})",
       .after = R"({"_id": 1, "a": {"b": {"c": 1}}})",
       .description = R"({"updatedFields": {"a": {"b": {"c": 1}}}})"},
      {.name = "dotted path under an existing document",
       .before = R"({"_id": 1, "a": {"x": 1}})",
       .update = R"({"$set": {"a.b.c": 1}})",
       .after = R"({"_id": 1, "a": {"x": 1, "b": {"c": 1}}})",
       .description = R"({"updatedFields": {"a.b": {"c": 1}}})"},
      {.name = "whole sub-document is reported at its path",
       .before = R"({"_id": 1, "a": {"x": 1}})",
       .update = R"({"$set": {"a": {"y": 2}}})",
       .after = R"({"_id": 1, "a": {"y": 2}})",
       .description = R"({"updatedFields": {"a": {"y": 2}}})"},
      {.name = "numeric component on an array is an index",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$set": {"a.1": 9}})",
       .after = R"({"_id": 1, "a": [1, 9, 3]})",
       .description = R"({"updatedFields": {"a.1": 9}})"},
      {.name = "index past the end pads with null; only the set element is reported",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$set": {"a.3": 9}})",
       .after = R"({"_id": 1, "a": [1, null, null, 9]})",
       .description = R"({"updatedFields": {"a.3": 9}})"},
      {.name = "padding then a new sub-document",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$set": {"a.2.b": 1}})",
       .after = R"({"_id": 1, "a": [null, null, {"b": 1}]})",
       .description = R"({"updatedFields": {"a.2": {"b": 1}}})"},
      {.name = "index with leading zero still indexes an array",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$set": {"a.01": 9}})",
       .after = R"({"_id": 1, "a": [1, 9]})",
       .description = R"({"updatedFields": {"a.1": 9}})"},
      {.name = "numeric component on a document is a field name",
       .before = R"({"_id": 1, "a": {}})",
       .update = R"({"$set": {"a.1": 9}})",
       .after = R"({"_id": 1, "a": {"1": 9}})",
       .description = R"({"updatedFields": {"a.1": 9}})"},
      {.name = "numeric component on a missing path creates a document",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"a.0": 9}})",
       .after = R"({"_id": 1, "a": {"0": 9}})",
       .description = R"({"updatedFields": {"a": {"0": 9}}})"},
      {.name = "field inside an array element",
       .before = R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})",
       .update = R"({"$set": {"a.1.b": 5}})",
       .after = R"({"_id": 1, "a": [{"b": 1}, {"b": 5}]})",
       .description = R"({"updatedFields": {"a.1.b": 5}})"},
      {.name = "traversing a scalar",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {"a.b": 1}})",
       .code = 28,
       .message = "Cannot create field 'b' in element {a: 1}"},
      {.name = "traversing null",
       .before = R"({"_id": 1, "a": null})",
       .update = R"({"$set": {"a.b.c": 1}})",
       .code = 28,
       .message = "Cannot create field 'b' in element {a: null}"},
      {.name = "field name on an array",
       .before = R"({"_id": 1, "a": [1, 2.5]})",
       .update = R"({"$set": {"a.b": 1}})",
       .code = 28,
       .message = "Cannot create field 'b' in element {a: [ 1, 2.5 ]}"},
      {.name = "scalar array element",
       .before = R"({"_id": 1, "a": [0]})",
       .update = R"({"$set": {"a.0.b": 1}})",
       .code = 28,
       .message = "Cannot create field 'b' in element {0: 0}"},
      {.name = "empty $set is a no-op",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {}})",
       .after = R"({"_id": 1, "a": 1})",
       .description = "noop"},
      {.name = "fields are created in lexicographic order",
       .before = R"({"_id": 1, "x": {}})",
       .update = R"({"$set": {"x.b": 2, "x.a": 1}})",
       .after = R"({"_id": 1, "x": {"a": 1, "b": 2}})",
       .description = R"({"updatedFields": {"x.a": 1, "x.b": 2}})"},
      {.name = "lexicographic order across operators",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"b": 1}, "$inc": {"a": 1}, "$max": {"B": 1}})",
       .after = R"({"_id": 1, "B": 1, "a": 1, "b": 1})",
       .description = R"({"updatedFields": {"B": 1, "a": 1, "b": 1}})"},
      {.name = "array indexes are applied in numeric order",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$set": {"a.10": 1, "a.9": 2}})",
       .after = R"({"_id": 1, "a": [null, null, null, null, null, null, null, null, null, 2, 1]})",
       .description = R"({"updatedFields": {"a.9": 2, "a.10": 1}})"},
      {.name = "two new fields under one new parent",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"x.b": 2, "x.a": 1}})",
       .after = R"({"_id": 1, "x": {"a": 1, "b": 2}})",
       .description = R"({"updatedFields": {"x": {"a": 1, "b": 2}}})"},
      {.name = "nested $-prefixed field names are allowed",
       .before = R"({"_id": 1, "a": {}})",
       .update = R"({"$set": {"a.$foo": 1}})",
       .after = R"({"_id": 1, "a": {"$foo": 1}})",
       .description = R"({"updatedFields": {"a.$foo": 1}})"},
      {.name = "a top-level $-prefixed field is not",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"$foo": 1}})",
       .code = 52,
       .message = "The dollar ($) prefixed field '$foo' in '$foo' is not allowed in the context "
                  "of an update's replacement document. Consider using an aggregation pipeline "
                  "with $replaceWith."},
      {.name = "$push without a field name",
       .before = R"({"_id": 1})",
       .update = R"({"$push": {"$each": [1]}})",
       .code = 52},
      {.name = "_id set to its value is a no-op",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {"_id": 1}})",
       .after = R"({"_id": 1, "a": 1})",
       .description = "noop"},
      {.name = "_id changed",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"_id": 2}})",
       .code = 66,
       .message = "Performing an update on the path '_id' would modify the immutable field '_id'"},
      {.name = "_id changed to an equal number of another type",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"_id": 1.0}})",
       .code = 66},
      {.name = "field inside _id changed",
       .before = R"({"_id": {"x": 1}})",
       .update = R"({"$set": {"_id.x": 2}})",
       .code = 66,
       .message = "Performing an update on the path '_id.x' would modify the immutable field "
                  "'_id'"},
      {.name = "field added inside _id",
       .before = R"({"_id": {"x": 1}})",
       .update = R"({"$set": {"_id.y": 2}})",
       .code = 66,
       .message = "Updating the path '_id' to _id: { x: 1, y: 2 } would modify the immutable "
                  "field '_id'"},
      {.name = "a failed operator leaves the document untouched",
       .before = R"({"_id": 1, "a": 1, "b": "x"})",
       .update = R"({"$set": {"a": 2}, "$inc": {"b": 1}})",
       .code = 14},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_unset, removes_or_nulls) {
  const update_case cases[] = {
      {.name = "existing field",
       .before = R"({"_id": 1, "a": 1, "b": 2})",
       .update = R"({"$unset": {"a": ""}})",
       .after = R"({"_id": 1, "b": 2})",
       .description = R"({"removedFields": ["a"]})"},
      {.name = "missing field is a no-op",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$unset": {"b": 1}})",
       .after = R"({"_id": 1, "a": 1})",
       .description = "noop"},
      {.name = "nested field",
       .before = R"({"_id": 1, "a": {"b": 1, "c": 1}})",
       .update = R"({"$unset": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": {"c": 1}})",
       .description = R"({"removedFields": ["a.b"]})"},
      {.name = "array element becomes null",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$unset": {"a.1": 1}})",
       .after = R"({"_id": 1, "a": [1, null, 3]})",
       .description = R"({"updatedFields": {"a.1": null}})"},
      {.name = "an array element that is already null still counts as changed",
       .before = R"({"_id": 1, "a": [1, null]})",
       .update = R"({"$unset": {"a.1": 1}})",
       .after = R"({"_id": 1, "a": [1, null]})",
       .description = R"({"updatedFields": {"a.1": null}})"},
      {.name = "through a scalar is a no-op, not an error",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$unset": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": 1})",
       .description = "noop"},
      {.name = "field name on an array is a no-op",
       .before = R"({"_id": 1, "a": [{"b": 1}]})",
       .update = R"({"$unset": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": [{"b": 1}]})",
       .description = "noop"},
      {.name = "several fields, reported in path order",
       .before = R"({"_id": 1, "a": 1, "b": 1, "c": {"d": 1}})",
       .update = R"({"$unset": {"c.d": 1, "b": 1, "a": 1}})",
       .after = R"({"_id": 1, "c": {}})",
       .description = R"({"removedFields": ["a", "b", "c.d"]})"},
      {.name = "_id",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$unset": {"_id": 1}})",
       .code = 66,
       .message = "Performing an update on the path '_id' would modify the immutable field '_id'"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_set_on_insert, applies_only_when_inserting) {
  const update_case cases[] = {
      {.name = "ignored by an update",
       .before = R"({"_id": 1})",
       .update = R"({"$setOnInsert": {"a": 1}})",
       .after = R"({"_id": 1})",
       .description = "noop"},
      {.name = "applied by an upsert insert",
       .before = R"({"_id": 1})",
       .update = R"({"$setOnInsert": {"a.b": 1}})",
       .after = R"({"_id": 1, "a": {"b": 1}})",
       .description = R"({"updatedFields": {"a": {"b": 1}}})",
       .inserting = true},
      {.name = "ignored even where the path is blocked",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$setOnInsert": {"a.b": 1}, "$set": {"c": 1}})",
       .after = R"({"_id": 1, "a": 1, "c": 1})",
       .description = R"({"updatedFields": {"c": 1}})"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_parse, path_and_operator_errors) {
  expect_parse_error(R"({"$foo": {"a": 1}})", "[]", 9,
                     "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style "
                     "update specified as an array");
  expect_parse_error(R"({"$set": {"a": 1}, "b": 2})", "[]", 9,
                     "Unknown modifier: b. Expected a valid update modifier or pipeline-style "
                     "update specified as an array");
  expect_parse_error(R"({"$set": "x"})", "[]", 9,
                     "Modifiers operate on fields but we found type string instead. For example: "
                     "{$mod: {<field>: ...}} not {$set: \"x\"}");
  expect_parse_error(R"({"$inc": [1]})", "[]", 9,
                     "Modifiers operate on fields but we found type array instead. For example: "
                     "{$mod: {<field>: ...}} not {$inc: [ 1 ]}");
  expect_parse_error(R"({"$set": {"a..b": 1}})", "[]", 56,
                     "The update path 'a..b' contains an empty field name, which is not allowed.");
  expect_parse_error(R"({"$set": {"a.": 1}})", "[]", 56, nullptr);
  expect_parse_error(R"({"$set": {"": 1}})", "[]", 56, "An empty update path is not valid.");
  expect_parse_error(R"({"$set": {"$.a": 1}})", "[]", 2,
                     "Cannot have positional (i.e. '$') element in the first position in path "
                     "'$.a'");
  expect_parse_error(R"({"$set": {"a.$.b.$": 1}})", "[]", 2,
                     "Too many positional (i.e. '$') elements found in path 'a.$.b.$'");
  expect_parse_error(R"({"$set": {"$[].a": 1}})", "[]", 2,
                     "Cannot have array filter identifier (i.e. '$[<id>]') element in the first "
                     "position in path '$[].a'");
}

TEST(update_parse, conflicts) {
  expect_parse_error(R"({"$set": {"a": 1}, "$inc": {"a": 1}})", "[]", 40,
                     "Updating the path 'a' would create a conflict at 'a'");
  expect_parse_error(R"({"$set": {"a.b": 1, "a": 1}})", "[]", 40,
                     "Updating the path 'a' would create a conflict at 'a'");
  expect_parse_error(R"({"$set": {"a": 1}, "$unset": {"a.b.c": 1}})", "[]", 40,
                     "Updating the path 'a.b.c' would create a conflict at 'a'");
  expect_parse_error(R"({"$set": {"a.b": 1}, "$unset": {"a.b.c": 1}})", "[]", 40,
                     "Updating the path 'a.b.c' would create a conflict at 'a.b'");
  expect_parse_error(R"({"$set": {"a.0": 1, "a.$[i]": 1}})", R"([{"i": 1}])", 40,
                     "Updating the path 'a.$[i]' would create a conflict at 'a'");
  expect_parse_error(R"({"$set": {"a.$": 1}, "$inc": {"a.$": 1}})", "[]", 40,
                     "Updating the path 'a.$' would create a conflict at 'a.$'");
  // Different paths sharing a prefix do not conflict.
  EXPECT_TRUE(parse_update(doc(R"({"$set": {"a.b": 1, "a.c": 1, "ab": 1}})"), {}));
  EXPECT_TRUE(parse_update(doc(R"({"$set": {"a.$": 1, "a.b": 1}})"), {}));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
