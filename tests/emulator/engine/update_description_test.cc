// The change stream updateDescription of combined updates: section order follows MongoDB's
// diff (updates, then new fields, then removals, then sub-documents, each level in turn).
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_description, combined_updates) {
  const update_case cases[] = {
      {.name = "new field, removed field and a nested change",
       .before = R"({"_id": 1, "a": {}, "d": 1})",
       .update = R"({"$set": {"a.b": 1, "c": 2}, "$unset": {"d": 1}})",
       .after = R"({"_id": 1, "a": {"b": 1}, "c": 2})",
       .description = R"({"updatedFields": {"c": 2, "a.b": 1}, "removedFields": ["d"]})"},
      {.name = "existing fields are reported before new ones",
       .before = R"({"_id": 1, "z": 1})",
       .update = R"({"$set": {"a": 1, "z": 2}})",
       .after = R"({"_id": 1, "z": 2, "a": 1})",
       .description = R"({"updatedFields": {"z": 2, "a": 1}})"},
      {.name = "append next to a field update",
       .before = R"({"_id": 1, "a": [1], "b": 1})",
       .update = R"({"$push": {"a": 2}, "$set": {"b": 2}})",
       .after = R"({"_id": 1, "a": [1, 2], "b": 2})",
       .description = R"({"updatedFields": {"b": 2, "a.1": 2}})"},
      {.name = "array elements by index",
       .before = R"({"_id": 1, "a": [{"x": 1}, {"x": 1}, 3]})",
       .update = R"({"$set": {"a.2": 4, "a.0.x": 2}, "$unset": {"a.1.x": 1}})",
       .after = R"({"_id": 1, "a": [{"x": 2}, {}, 4]})",
       .description = R"({"updatedFields": {"a.0.x": 2, "a.2": 4}, "removedFields": ["a.1.x"]})"},
      {.name = "deep creation under an array element",
       .before = R"({"_id": 1, "a": [{}]})",
       .update = R"({"$set": {"a.0.b.c": 1}})",
       .after = R"({"_id": 1, "a": [{"b": {"c": 1}}]})",
       .description = R"({"updatedFields": {"a.0.b": {"c": 1}}})"},
      {.name = "every operator a no-op",
       .before = R"({"_id": 1, "a": 1, "b": [1], "c": [2]})",
       .update =
           R"({"$set": {"a": 1}, "$unset": {"x": 1}, "$pull": {"b": 5}, "$addToSet": {"c": 2}})",
       .after = R"({"_id": 1, "a": 1, "b": [1], "c": [2]})",
       .description = "noop"},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(update_description, to_document_shape) {
  update_description d;
  d.updated_fields.append("a", 1);
  d.removed_fields.push_back("b");
  EXPECT_EQ(
      json(d.to_document()),
      json(doc(R"({"updatedFields": {"a": 1}, "removedFields": ["b"], "truncatedArrays": []})")));
  EXPECT_FALSE(d.empty());
  EXPECT_TRUE(update_description{}.empty());
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
