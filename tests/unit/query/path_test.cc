#include "query/path.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::query {
namespace {

std::string reached(const char* json, const char* path) {
  const auto d = *bson::parse_json(json);
  std::string out;
  resolve_branches(d, path, [&](const bson::value* v, std::optional<std::size_t> i) {
    out += v ? bson::to_json(*v) : "missing";
    out += "@" + (i ? std::to_string(*i) : std::string("-")) + " ";
    return true;
  });
  return out;
}

TEST(path_test, fans_out_over_array_elements_with_their_index) {
  EXPECT_EQ(reached(R"({"a":[{"b":1},{"c":2},{"b":[3]}]})", "a.b"), "1@0 missing@1 [3]@2 ");
  EXPECT_EQ(reached(R"({"a":{"b":{"c":4}}})", "a.b.c"), "4@- ");
  EXPECT_EQ(reached(R"({"a":[5,6]})", "a.1"), "6@- ");
  EXPECT_EQ(reached(R"({"a":[5,6]})", "a.2"), "missing@- ");
  EXPECT_EQ(reached(R"({"a":[5,6]})", "a.b"), "missing@- ");
  EXPECT_EQ(reached(R"({})", "a"), "missing@- ");
  EXPECT_EQ(reached(R"({"a":[{"b":[{"c":1},{"c":2}]}]})", "a.b.c"), "1@0 2@0 ");
}

TEST(path_test, parse_index_accepts_only_canonical_integers) {
  EXPECT_EQ(parse_index("0"), 0u);
  EXPECT_EQ(parse_index("12"), 12u);
  EXPECT_FALSE(parse_index("01"));
  EXPECT_FALSE(parse_index("-1"));
  EXPECT_FALSE(parse_index("1a"));
  EXPECT_FALSE(parse_index(""));
}

TEST(path_test, field_components_leave_out_the_array_indexes) {
  using parts = std::vector<std::string_view>;
  EXPECT_EQ(field_components("items.0.status"), (parts{"items", "status"}));
  EXPECT_EQ(field_components("items.3"), (parts{"items"}));
  EXPECT_EQ(field_components("o.0.i.12.q"), (parts{"o", "i", "q"}));
  EXPECT_EQ(field_components("items.01.x"), (parts{"items", "01", "x"}));
  EXPECT_EQ(field_components("a..b"), (parts{"a", "", "b"}));
  EXPECT_EQ(field_components("name"), (parts{"name"}));
}

}  // namespace
}  // namespace denormd::query
