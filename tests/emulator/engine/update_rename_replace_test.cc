// $rename and replacement-style updates.
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_rename, moves_fields) {
  const update_case cases[] = {
      {.name = "top-level",
       .before = R"({"_id": 1, "a": 1, "c": 3})",
       .update = R"({"$rename": {"a": "b"}})",
       .after = R"({"_id": 1, "c": 3, "b": 1})",
       .description = R"({"updatedFields": {"b": 1}, "removedFields": ["a"]})"},
      {.name = "missing source is a no-op",
       .before = R"({"_id": 1, "c": 3})",
       .update = R"({"$rename": {"a": "b"}})",
       .after = R"({"_id": 1, "c": 3})",
       .description = "noop"},
      {.name = "missing nested source is a no-op",
       .before = R"({"_id": 1, "a": {}})",
       .update = R"({"$rename": {"a.x": "b"}})",
       .after = R"({"_id": 1, "a": {}})",
       .description = "noop"},
      {.name = "to a dotted path under an existing document",
       .before = R"({"_id": 1, "a": 1, "x": {}})",
       .update = R"({"$rename": {"a": "x.y"}})",
       .after = R"({"_id": 1, "x": {"y": 1}})",
       .description = R"({"updatedFields": {"x.y": 1}, "removedFields": ["a"]})"},
      {.name = "to a dotted path that does not exist",
       .before = R"({"_id": 1, "a": {"v": 1}})",
       .update = R"({"$rename": {"a": "x.y"}})",
       .after = R"({"_id": 1, "x": {"y": {"v": 1}}})",
       .description = R"({"updatedFields": {"x": {"y": {"v": 1}}}, "removedFields": ["a"]})"},
      {.name = "from a dotted path",
       .before = R"({"_id": 1, "a": {"b": 1, "c": 2}})",
       .update = R"({"$rename": {"a.b": "d"}})",
       .after = R"({"_id": 1, "a": {"c": 2}, "d": 1})",
       .description = R"({"updatedFields": {"d": 1}, "removedFields": ["a.b"]})"},
      {.name = "overwrites the destination",
       .before = R"({"_id": 1, "a": 1, "b": 2})",
       .update = R"({"$rename": {"a": "b"}})",
       .after = R"({"_id": 1, "b": 1})",
       .description = R"({"updatedFields": {"b": 1}, "removedFields": ["a"]})"},
      {.name = "applied in destination order with other operators",
       .before = R"({"_id": 1, "z": 1})",
       .update = R"({"$rename": {"z": "b"}, "$set": {"a": 0, "c": 0}})",
       .after = R"({"_id": 1, "a": 0, "b": 1, "c": 0})",
       .description = R"({"updatedFields": {"a": 0, "b": 1, "c": 0}, "removedFields": ["z"]})"},
      {.name = "source through an array",
       .before = R"({"_id": 1, "a": [{"b": 1}]})",
       .update = R"({"$rename": {"a.0.b": "c"}})",
       .code = 2,
       .message = "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has "
                  "an array field called 'a'"},
      {.name = "source path not viable",
       .before = R"({"_id": 1, "a": [{"b": 1}]})",
       .update = R"({"$rename": {"a.b": "c"}})",
       .code = 28,
       .message = "cannot use the part (a of a.b) to traverse the element ({a: [ { b: 1 } ]})"},
      {.name = "source path blocked by a scalar",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$rename": {"a.b.c": "d"}})",
       .code = 28,
       .message = "cannot use the part (a of a.b.c) to traverse the element ({a: 1})"},
      {.name = "destination through an array",
       .before = R"({"_id": 1, "a": 1, "b": [1]})",
       .update = R"({"$rename": {"a": "b.0"}})",
       .code = 2,
       .message = "The destination field cannot be an array element, 'b.0' in doc with _id: 1 "
                  "has an array field called 'b'"},
      {.name = "destination blocked by a scalar",
       .before = R"({"_id": 1, "a": 1, "b": 2})",
       .update = R"({"$rename": {"a": "b.c"}})",
       .code = 28,
       .message = "Cannot create field 'c' in element {b: 2}"},
      {.name = "renaming _id",
       .before = R"({"_id": 1})",
       .update = R"({"$rename": {"_id": "x"}})",
       .code = 66,
       .message = "Performing an update on the path '_id' would modify the immutable field '_id'"},
      {.name = "renaming onto _id",
       .before = R"({"_id": 1, "a": 2})",
       .update = R"({"$rename": {"a": "_id"}})",
       .code = 66},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_rename, validation) {
  expect_parse_error(R"({"$rename": {"a": 1}})", "[]", 2,
                     "The 'to' field for $rename must be a string: a: 1");
  expect_parse_error(R"({"$rename": {"a": "a"}})", "[]", 2,
                     "The source and target field for $rename must differ: a: \"a\"");
  expect_parse_error(R"({"$rename": {"a": "a.b"}})", "[]", 2,
                     "The source and target field for $rename must not be on the same path: a: "
                     "\"a.b\"");
  expect_parse_error(R"({"$rename": {"a.b": "a"}})", "[]", 2,
                     "The source and target field for $rename must not be on the same path: a.b: "
                     "\"a\"");
  expect_parse_error(R"({"$rename": {"a.$": "b"}})", "[]", 2,
                     "The source field for $rename may not be dynamic: a.$");
  expect_parse_error(R"({"$rename": {"a": "b.$[]"}})", "[]", 2,
                     "The destination field for $rename may not be dynamic: b.$[]");
  expect_parse_error(R"({"$rename": {"a": ""}})", "[]", 56, "An empty update path is not valid.");
  expect_parse_error(R"({"$set": {"a": 1}, "$rename": {"a": "b"}})", "[]", 40,
                     "Updating the path 'a' would create a conflict at 'a'");
  expect_parse_error(R"({"$set": {"b": 1}, "$rename": {"a": "b"}})", "[]", 40,
                     "Updating the path 'b' would create a conflict at 'b'");
  expect_parse_error(R"({"$rename": {"a": "b", "c": "b"}})", "[]", 40,
                     "Updating the path 'b' would create a conflict at 'b'");
}

TEST(update_replacement, replaces_keeping_id) {
  const update_case cases[] = {
      {.name = "keeps _id, replaces the rest",
       .before = R"({"_id": 1, "a": 1, "b": 2})",
       .update = R"({"c": 3})",
       .after = R"({"_id": 1, "c": 3})"},
      {.name = "same _id given",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"a": 2, "_id": 1})",
       .after = R"({"_id": 1, "a": 2})"},
      {.name = "identical document with _id is a no-op",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"_id": 1, "a": 1})",
       .after = R"({"_id": 1, "a": 1})",
       .description = "noop"},
      {.name = "empty replacement leaves only _id",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({})",
       .after = R"({"_id": 1})"},
      {.name = "nested $-prefixed and dotted field names are storable",
       .before = R"({"_id": 1})",
       .update = R"({"a.b": 1, "c": {"$d": 1}})",
       .after = R"({"_id": 1, "a.b": 1, "c": {"$d": 1}})"},
      {.name = "changing _id",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"_id": 2, "a": 1})",
       .code = 66,
       .message = "After applying the update, the (immutable) field '_id' was found to have been "
                  "altered to _id: 2"},
      {.name = "top-level $ field",
       .before = R"({"_id": 1})",
       .update = R"({"a": 1, "$set": {"b": 1}})",
       .code = 52,
       .message = "The dollar ($) prefixed field '$set' in '$set' is not allowed in the context "
                  "of an update's replacement document. Consider using an aggregation pipeline "
                  "with $replaceWith."},
      {.name = "array _id",
       .before = R"({"a": 1})",
       .update = R"({"_id": [1]})",
       .code = 53,
       .message = "The '_id' value cannot be of type array"},
  };
  for (const auto& c : cases)
    run_case(c);

  auto spec = parse_update(doc(R"({"a": 1})"), {});
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->is_replacement());
  auto d = doc(R"({"_id": 1, "b": 1})");
  auto r = apply_update(*spec, d, {});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->replaced);
  EXPECT_FALSE(r->empty());
  EXPECT_TRUE(r->updated_fields.empty());

  // Without `_id` the replacement differs from the stored document, so MongoDB rewrites it
  // (nModified 1, a replace event) even though the result is the same.
  auto same = doc(R"({"_id": 1, "a": 1})");
  auto rewritten = apply_update(*spec, same, {});
  ASSERT_TRUE(rewritten);
  EXPECT_TRUE(rewritten->replaced);
  EXPECT_EQ(json(same), json(doc(R"({"_id": 1, "a": 1})")));
}

TEST(update_replacement, moves_id_first) {
  auto spec = parse_update(doc(R"({"a": 1, "_id": 1})"), {});
  ASSERT_TRUE(spec);
  auto d = doc(R"({"_id": 1})");
  ASSERT_TRUE(apply_update(*spec, d, {}));
  EXPECT_EQ(json(d), json(doc(R"({"_id": 1, "a": 1})")));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
