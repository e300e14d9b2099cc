// The positional `$`, all-elements `$[]` and filtered `$[id]` operators.
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_positional, first_matched_element) {
  const update_case cases[] = {
      {.name = "sets the matched element",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$set": {"a.$": 9}})",
       .after = R"({"_id": 1, "a": [1, 9, 3]})",
       .description = R"({"updatedFields": {"a.1": 9}})",
       .positional = 1},
      {.name = "field of the matched element",
       .before = R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})",
       .update = R"({"$inc": {"a.$.b": 10}})",
       .after = R"({"_id": 1, "a": [{"b": 1}, {"b": 12}]})",
       .description = R"({"updatedFields": {"a.1.b": 12}})",
       .positional = 1},
      {.name = "new field in the matched element",
       .before = R"({"_id": 1, "a": [{"b": 1}, {"b": 2}]})",
       .update = R"({"$set": {"a.$.c": 5}})",
       .after = R"({"_id": 1, "a": [{"b": 1, "c": 5}, {"b": 2}]})",
       .description = R"({"updatedFields": {"a.0.c": 5}})",
       .positional = 0},
      {.name = "$unset of the matched element nulls it",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$unset": {"a.$": 1}})",
       .after = R"({"_id": 1, "a": [null, 2]})",
       .description = R"({"updatedFields": {"a.0": null}})",
       .positional = 0},
      {.name = "merged with an update of the same element",
       .before = R"({"_id": 1, "a": [{}, {}]})",
       .update = R"({"$set": {"a.$.x": 1, "a.1.y": 2}})",
       .after = R"({"_id": 1, "a": [{}, {"x": 1, "y": 2}]})",
       .description = R"({"updatedFields": {"a.1.x": 1, "a.1.y": 2}})",
       .positional = 1},
      {.name = "conflict with an update of the same element",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$set": {"a.$": 1, "a.1": 2}})",
       .code = 40,
       .message = "Update created a conflict at 'a.1'",
       .positional = 1},
      {.name = "no match needed from the query",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$set": {"a.$": 9}})",
       .code = 2,
       .message = "The positional operator did not find the match needed from the query."},
      {.name = "matched position past the end pads",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$set": {"a.$": 9}})",
       .after = R"({"_id": 1, "a": [1, null, 9]})",
       .description = R"({"updatedFields": {"a.2": 9}})",
       .positional = 2},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_all_elements, every_element) {
  const update_case cases[] = {
      {.name = "several elements change: the array is reported whole",
       .before = R"({"_id": 1, "a": [1, 2, 3]})",
       .update = R"({"$inc": {"a.$[]": 1}})",
       .after = R"({"_id": 1, "a": [2, 3, 4]})",
       .description = R"({"updatedFields": {"a": [2, 3, 4]}})"},
      {.name = "a single element reports itself",
       .before = R"({"_id": 1, "a": [1]})",
       .update = R"({"$inc": {"a.$[]": 1}})",
       .after = R"({"_id": 1, "a": [2]})",
       .description = R"({"updatedFields": {"a.0": 2}})"},
      {.name = "one of several changes: that element is reported whole",
       .before = R"({"_id": 1, "a": [{"b": 0, "c": 1}, {"b": 2}]})",
       .update = R"({"$set": {"a.$[].b": 0}})",
       .after = R"({"_id": 1, "a": [{"b": 0, "c": 1}, {"b": 0}]})",
       .description = R"({"updatedFields": {"a.1": {"b": 0}}})"},
      {.name = "nothing changes",
       .before = R"({"_id": 1, "a": [{"b": 0}, {"b": 0}]})",
       .update = R"({"$set": {"a.$[].b": 0}})",
       .after = R"({"_id": 1, "a": [{"b": 0}, {"b": 0}]})",
       .description = "noop"},
      {.name = "empty array",
       .before = R"({"_id": 1, "a": []})",
       .update = R"({"$set": {"a.$[]": 1}})",
       .after = R"({"_id": 1, "a": []})",
       .description = "noop"},
      {.name = "missing array",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"a.$[]": 1}})",
       .code = 2,
       .message = "The path 'a' must exist in the document in order to apply array updates."},
      {.name = "missing nested array",
       .before = R"({"_id": 1})",
       .update = R"({"$set": {"x.a.$[].b": 1}})",
       .code = 2,
       .message = "The path 'x.a' must exist in the document in order to apply array updates."},
      {.name = "not an array",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$set": {"a.$[]": 1}})",
       .code = 2,
       .message = "Cannot apply array updates to non-array element a: 1"},
      {.name = "scalar elements cannot take fields",
       .before = R"({"_id": 1, "a": [0]})",
       .update = R"({"$set": {"a.$[].b": 1}})",
       .code = 28,
       .message = "Cannot create field 'b' in element {0: 0}"},
      {.name = "$unset of every element nulls them",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$unset": {"a.$[]": 1}})",
       .after = R"({"_id": 1, "a": [null, null]})",
       .description = R"({"updatedFields": {"a": [null, null]}})"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_array_filters, filtered_elements) {
  const update_case cases[] = {
      {.name = "{id: condition}",
       .before = R"({"_id": 1, "a": [1, 5, 10]})",
       .update = R"({"$set": {"a.$[x]": 0}})",
       .after = R"({"_id": 1, "a": [1, 0, 0]})",
       .description = R"({"updatedFields": {"a": [1, 0, 0]}})",
       .filters = R"([{"x": {"$gte": 5}}])"},
      {.name = "{id.field: condition}, one element: concrete path",
       .before = R"({"_id": 1, "a": [{"f": 1, "g": 1}, {"f": 2, "g": 2}]})",
       .update = R"({"$set": {"a.$[e].g": 9}})",
       .after = R"({"_id": 1, "a": [{"f": 1, "g": 1}, {"f": 2, "g": 9}]})",
       .description = R"({"updatedFields": {"a.1.g": 9}})",
       .filters = R"([{"e.f": 2}])"},
      {.name = "filter with $and over the identifier",
       .before = R"({"_id": 1, "a": [{"f": 1, "g": 1}, {"f": 2, "g": 2}, {"f": 3, "g": 2}]})",
       .update = R"({"$inc": {"a.$[e].g": 1}})",
       .after = R"({"_id": 1, "a": [{"f": 1, "g": 1}, {"f": 2, "g": 3}, {"f": 3, "g": 2}]})",
       .description = R"({"updatedFields": {"a.1.g": 3}})",
       .filters = R"([{"$and": [{"e.f": {"$gt": 1}}, {"e.f": {"$lt": 3}}]}])"},
      {.name = "no element matches",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$set": {"a.$[x]": 0}})",
       .after = R"({"_id": 1, "a": [1, 2]})",
       .description = "noop",
       .filters = R"([{"x": 7}])"},
      {.name = "nested identifiers",
       .before =
           R"({"_id": 1, "y": [{"k": 1, "c": [{"d": 1}, {"d": 2}]}, {"k": 2, "c": [{"d": 3}]}]})",
       .update = R"({"$set": {"y.$[i].c.$[j].d": 0}})",
       .after =
           R"({"_id": 1, "y": [{"k": 1, "c": [{"d": 1}, {"d": 0}]}, {"k": 2, "c": [{"d": 3}]}]})",
       .description = R"({"updatedFields": {"y.0.c.1.d": 0}})",
       .filters = R"([{"i.k": 1}, {"j.d": {"$gte": 2}}])"},
      {.name = "nested identifiers over several outer elements",
       .before = R"({"_id": 1, "y": [{"c": [1, 5]}, {"c": [5]}]})",
       .update = R"({"$set": {"y.$[].c.$[j]": 0}})",
       .after = R"({"_id": 1, "y": [{"c": [1, 0]}, {"c": [0]}]})",
       .description = R"({"updatedFields": {"y": [{"c": [1, 0]}, {"c": [0]}]}})",
       .filters = R"([{"j": 5}])"},
      {.name = "two identifiers on one element merge",
       .before = R"({"_id": 1, "a": [{"k": 1}, {"k": 2}]})",
       .update = R"({"$set": {"a.$[i].x": 1, "a.$[j].y": 2}})",
       .after = R"({"_id": 1, "a": [{"k": 1, "x": 1, "y": 2}, {"k": 2}]})",
       .description = R"({"updatedFields": {"a.0.x": 1, "a.0.y": 2}})",
       .filters = R"([{"i.k": 1}, {"j.k": 1}])"},
      {.name = "two identifiers setting one element conflict",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$set": {"a.$[i]": 1, "a.$[j]": 2}})",
       .code = 40,
       .message = "Update created a conflict at 'a.0'",
       .filters = R"([{"i": 1}, {"j": {"$lt": 2}}])"},
      {.name = "$[] and $[id] on one element conflict at the leaf",
       .before = R"({"_id": 1, "a": [{"b": 1}]})",
       .update = R"({"$set": {"a.$[].b": 1, "a.$[i].b": 2}})",
       .code = 40,
       .message = "Update created a conflict at 'a.0.b'",
       .filters = R"([{"i.b": 1}])"},
      {.name = "filter decided before any change",
       .before = R"({"_id": 1, "a": [1, 2]})",
       .update = R"({"$inc": {"a.$[x]": 1}})",
       .after = R"({"_id": 1, "a": [2, 2]})",
       .description = R"({"updatedFields": {"a.0": 2}})",
       .filters = R"([{"x": 1}])"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_array_filters, validation) {
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", "[]", 2,
                     "No array filter found for identifier 'i' in path 'a.$[i]'");
  expect_parse_error(R"({"$set": {"a.$[i].b": 1}})", R"([{"j": 1}])", 2,
                     "No array filter found for identifier 'i' in path 'a.$[i].b'");
  expect_parse_error(R"({"$set": {"a.$[i]": 5}})", R"([{"i": 0}, {"j": 0}])", 9,
                     "The array filter for identifier 'j' was not used in the update "
                     "{ $set: { a.$[i]: 5 } }");
  expect_parse_error(R"({"$set": {"a.$[]": 5}})", R"([{"i": 0}])", 9,
                     "The array filter for identifier 'i' was not used in the update "
                     "{ $set: { a.$[]: 5 } }");
  expect_parse_error(R"({"$set": {"a.$[I]": 1}})", R"([{"I": 0}])", 2,
                     "Error parsing array filter :: caused by :: The top-level field name must "
                     "be an alphanumeric string beginning with a lowercase letter, found 'I'");
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", R"([{"i": 0, "j": 1}])", 9,
                     "Error parsing array filter :: caused by :: Expected a single top-level "
                     "field name, found 'i' and 'j'");
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", R"([{"$or": [{"i": 0}, {"k.x": 1}]}])", 9,
                     "Error parsing array filter :: caused by :: Expected a single top-level "
                     "field name, found 'i' and 'k'");
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", R"([{"i": 0}, {"i": 1}])", 9,
                     "Found multiple array filters with the same top-level field name i");
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", R"([{}])", 9,
                     "Cannot use an expression without a top-level field name in arrayFilters");
  expect_parse_error(R"({"$set": {"a.$[i]": 1}})", R"([{"i": {"$foo": 1}}])", 2, nullptr);
  // A filter may use several conditions on its identifier, and $[] needs no filter.
  EXPECT_TRUE(parse_update(doc(R"({"$set": {"a.$[i].b": 1, "c.$[]": 1}})"),
                           documents(R"([{"i.b": {"$gt": 1}, "i.c": 2}])")));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_positional, spec_reports_positional_use) {
  EXPECT_TRUE(parse_update(doc(R"({"$set": {"a.$.b": 1}})"), {})->uses_positional());
  EXPECT_FALSE(parse_update(doc(R"({"$set": {"a.$[].b": 1}})"), {})->uses_positional());
  EXPECT_FALSE(parse_update(doc(R"({"a": 1})"), {})->uses_positional());
}

TEST(update_all_elements, array_operators_inside_elements) {
  const update_case cases[] = {
      {.name = "$push into every element's array",
       .before = R"({"_id": 1, "a": [{"r": [1]}, {"r": []}]})",
       .update = R"({"$push": {"a.$[].r": 2}})",
       .after = R"({"_id": 1, "a": [{"r": [1, 2]}, {"r": [2]}]})",
       .description = R"({"updatedFields": {"a": [{"r": [1, 2]}, {"r": [2]}]}})"},
      {.name = "$push into the one matching element's array appends",
       .before = R"({"_id": 1, "a": [{"k": 1, "r": [1]}, {"k": 2, "r": []}]})",
       .update = R"({"$push": {"a.$[e].r": 2}})",
       .after = R"({"_id": 1, "a": [{"k": 1, "r": [1, 2]}, {"k": 2, "r": []}]})",
       .description = R"({"updatedFields": {"a.0.r.1": 2}})",
       .filters = R"([{"e.k": 1}])"},
      {.name = "$pull inside nested arrays",
       .before = R"({"_id": 1, "a": [[1, 2], [2, 3]]})",
       .update = R"({"$pull": {"a.$[]": 2}})",
       .after = R"({"_id": 1, "a": [[1], [3]]})",
       .description = R"({"updatedFields": {"a": [[1], [3]]}})"},
  };
  for (const auto& c : cases)
    run_case(c);
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
