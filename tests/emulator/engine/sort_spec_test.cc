#include "sort_spec.h"

#include "test_support.h"

namespace mongo_emulator::engine::testing {
namespace {

// Sorts `docs` (a JSON array) by `spec` and returns the `_id`s in order, as JSON.
std::string sorted_ids(const char* spec, const char* docs) {
  auto s = parse_sort(doc(spec));
  EXPECT_TRUE(s) << spec;
  if (!s) return {};
  auto list = documents(docs);
  s->sort(list);
  denormd::bson::array ids;
  for (const auto& d : list)
    ids.push_back(*d.get("_id"));
  return json(denormd::bson::document{{"ids", ids}});
}

std::string ids(const char* json_array) {
  return json(doc(std::string(R"({"ids": )") + json_array + "}"));
}

TEST(sort_spec, missing_is_null_and_ties_are_stable) {
  EXPECT_EQ(sorted_ids(R"({"a": 1})", R"([{"_id": 1, "a": 1}, {"_id": 2}, {"_id": 3, "a": null}])"),
            ids("[2, 3, 1]"));
  EXPECT_EQ(
      sorted_ids(R"({"a": -1})", R"([{"_id": 1, "a": 1}, {"_id": 2}, {"_id": 3, "a": null}])"),
      ids("[1, 2, 3]"));
}

TEST(sort_spec, bson_order_across_types) {
  EXPECT_EQ(sorted_ids(R"({"a": 1})",
                       R"([{"_id": 1, "a": "s"}, {"_id": 2, "a": {"x": 1}}, {"_id": 3, "a": 5},
                           {"_id": 4, "a": true}, {"_id": 5, "a": 2.5}, {"_id": 6, "a": null}])"),
            ids("[6, 5, 3, 1, 2, 4]"));
}

TEST(sort_spec, arrays_by_min_ascending_and_max_descending) {
  const char* docs = R"([{"_id": 1, "a": [1, 5]}, {"_id": 2, "a": 3}, {"_id": 3, "a": [4]}])";
  EXPECT_EQ(sorted_ids(R"({"a": 1})", docs), ids("[1, 2, 3]"));
  EXPECT_EQ(sorted_ids(R"({"a": -1})", docs), ids("[1, 3, 2]"));
  // An empty array sorts before null and missing.
  EXPECT_EQ(
      sorted_ids(R"({"a": 1})", R"([{"_id": 1, "a": null}, {"_id": 2, "a": []}, {"_id": 3}])"),
      ids("[2, 1, 3]"));
  // Through an array of documents.
  EXPECT_EQ(sorted_ids(R"({"a.b": 1})",
                       R"([{"_id": 1, "a": [{"b": 3}, {"b": 2}]}, {"_id": 2, "a": {"b": 1}}])"),
            ids("[2, 1]"));
  EXPECT_EQ(sorted_ids(R"({"a.0": 1})", R"([{"_id": 1, "a": [3, 0]}, {"_id": 2, "a": [2, 9]}])"),
            ids("[2, 1]"));
}

TEST(sort_spec, several_keys) {
  EXPECT_EQ(sorted_ids(R"({"a": 1, "b": -1})",
                       R"([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 0, "b": 1},
                           {"_id": 3, "a": 1, "b": 2}])"),
            ids("[2, 3, 1]"));
}

TEST(sort_spec, comparator_and_validation) {
  auto s = parse_sort(doc(R"({"a": 1.5})"));  // read as 1, as MongoDB does
  ASSERT_TRUE(s);
  EXPECT_TRUE((*s)(doc(R"({"a": 1})"), doc(R"({"a": 2})")));
  EXPECT_FALSE((*s)(doc(R"({"a": 2})"), doc(R"({"a": 2})")));
  EXPECT_TRUE(parse_sort(doc("{}"))->empty());

  auto bad_order = parse_sort(doc(R"({"a": 2})"));
  ASSERT_FALSE(bad_order);
  EXPECT_EQ(bad_order.error().code, 15975);
  EXPECT_EQ(bad_order.error().message,
            "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
  auto bad_type = parse_sort(doc(R"({"a": "asc"})"));
  ASSERT_FALSE(bad_type);
  EXPECT_EQ(bad_type.error().code, 15974);
  EXPECT_EQ(bad_type.error().message,
            "$sort key ordering must be specified using a number or {$meta: 'textScore'}");
  EXPECT_FALSE(parse_sort(doc(R"({"a..b": 1})")));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
