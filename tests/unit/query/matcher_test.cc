#include "query/matcher.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::query {
namespace {

// libbson's JSON reader takes "$type" for legacy binary syntax, so tests spell the query
// operator "%type" and rename it after parsing.
void rename_type_keys(bson::document& d) {
  for (auto& f : d) {
    if (f.name == "%type") f.name = "$type";
    if (f.val.is_document()) rename_type_keys(f.val.as_document());
  }
}

bson::document doc(const std::string& json) {
  auto d = bson::parse_json(json);
  EXPECT_TRUE(d.has_value()) << json << ": " << (d ? "" : d.error().message);
  if (!d) return {};
  rename_type_keys(*d);
  return *d;
}

struct match_case {
  const char* filter;
  const char* document;
  bool expected;
};

class matches_test : public ::testing::TestWithParam<match_case> {};

TEST_P(matches_test, evaluates_like_mongodb) {
  const auto& c = GetParam();
  auto m = matcher::compile(doc(c.filter));
  ASSERT_TRUE(m.has_value()) << c.filter << ": " << m.error().message;
  EXPECT_EQ(m->matches(doc(c.document)), c.expected) << c.filter << " on " << c.document;
}

INSTANTIATE_TEST_SUITE_P(
    cases, matches_test,
    ::testing::Values(
        // equality, numbers across types, array contains, whole-array equality
        match_case{R"({"a":1})", R"({"a":1.0})", true},
        match_case{R"({"a":1})", R"({"a":"1"})", false},
        match_case{R"({"a":2})", R"({"a":[1,2,3]})", true},
        match_case{R"({"a":[1,2]})", R"({"a":[1,2]})", true},
        match_case{R"({"a":[1,2]})", R"({"a":[[1,2],3]})", true},
        match_case{R"({"a":[2,1]})", R"({"a":[1,2]})", false},
        match_case{R"({"a":{"b":1}})", R"({"a":{"b":1}})", true},
        match_case{R"({"a":{"b":1}})", R"({"a":{"b":1,"c":2}})", false},
        // null matches null, missing, and arrays holding null
        match_case{R"({"a":null})", R"({})", true},
        match_case{R"({"a":null})", R"({"a":null})", true},
        match_case{R"({"a":null})", R"({"a":0})", false},
        match_case{R"({"a":null})", R"({"a":[1,null]})", true},
        match_case{R"({"a":null})", R"({"a":{"$undefined":true}})", true},
        match_case{R"({"a.b":null})", R"({"a":[{"b":1},{"c":2}]})", true},
        match_case{R"({"a.b":null})", R"({"a":[{"b":1}]})", false},
        match_case{R"({"a.b":null})", R"({"a":5})", true},
        // dotted paths through arrays and numeric indexes
        match_case{R"({"a.b":2})", R"({"a":[{"b":1},{"b":2}]})", true},
        match_case{R"({"a.b":3})", R"({"a":[{"b":1},{"b":[2,3]}]})", true},
        match_case{R"({"a.1":5})", R"({"a":[4,5]})", true},
        match_case{R"({"a.0.b":1})", R"({"a":[{"b":1}]})", true},
        match_case{R"({"a.0.b":null})", R"({"a":[{"b":1}]})", false},
        match_case{R"({"a.b.c":1})", R"({"a":[{"b":[{"c":0},{"c":1}]}]})", true},
        // comparisons with type bracketing
        match_case{R"({"a":{"$gt":5}})", R"({"a":6.5})", true},
        match_case{R"({"a":{"$gt":5}})", R"({"a":"9"})", false},
        match_case{R"({"a":{"$lt":"b"}})", R"({"a":"a"})", true},
        match_case{R"({"a":{"$gte":5,"$lt":6}})", R"({"a":[1,10]})", true},  // per element
        match_case{R"({"a":{"$gte":5,"$lt":9}})", R"({"a":[1,7]})", true},
        match_case{R"({"a":{"$gt":5,"$lt":6}})", R"({"a":[4,7]})", true},
        match_case{R"({"a":{"$gte":null}})", R"({})", true},
        match_case{R"({"a":{"$gt":{"$minKey":1}}})", R"({"a":"x"})", true},
        match_case{R"({"d":{"$gt":{"$date":"2024-01-01T00:00:00Z"}}})",
                   R"({"d":{"$date":"2024-06-01T00:00:00Z"}})", true},
        match_case{R"({"a":{"$gt":[1]}})", R"({"a":[2]})", true},
        // $ne, $in, $nin
        match_case{R"({"a":{"$ne":1}})", R"({"a":[1,2]})", false},
        match_case{R"({"a":{"$ne":1}})", R"({})", true},
        match_case{R"({"s":{"$nin":["DELIVERED","CANCELLED"]}})", R"({"s":"NEW"})", true},
        match_case{R"({"s":{"$nin":["DELIVERED","CANCELLED"]}})", R"({"s":"DELIVERED"})", false},
        match_case{R"({"s":{"$nin":["DELIVERED"]}})", R"({})", true},
        match_case{R"({"a":{"$in":[1,2]}})", R"({"a":[5,2]})", true},
        match_case{R"({"a":{"$in":[null]}})", R"({})", true},
        match_case{R"({"a":{"$in":[]}})", R"({"a":1})", false},
        // $exists
        match_case{R"({"a":{"$exists":true}})", R"({"a":null})", true},
        match_case{R"({"a":{"$exists":false}})", R"({"b":1})", true},
        match_case{R"({"a.b":{"$exists":true}})", R"({"a":[{"c":1},{"b":1}]})", true},
        match_case{R"({"a.b":{"$exists":true}})", R"({"a":[1,2]})", false},
        match_case{R"({"a.1":{"$exists":true}})", R"({"a":[1,2]})", true},
        // logical operators
        match_case{R"({"$or":[{"a":1},{"b":2}]})", R"({"b":2})", true},
        match_case{R"({"$and":[{"a":1},{"b":2}]})", R"({"a":1,"b":3})", false},
        match_case{R"({"$nor":[{"a":1},{"b":2}]})", R"({"a":3})", true},
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({"a":3})", true},
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({})", true},
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({"a":[1,7]})", false},
        // $elemMatch, $size, $type, $all
        match_case{R"({"a":{"$elemMatch":{"$gte":5,"$lt":6}}})", R"({"a":[1,10]})", false},
        match_case{R"({"a":{"$elemMatch":{"$gte":5,"$lt":9}}})", R"({"a":[1,7]})", true},
        match_case{R"({"a":{"$elemMatch":{"x":1,"y":2}}})", R"({"a":[{"x":1},{"y":2}]})", false},
        match_case{R"({"a":{"$elemMatch":{"x":1,"y":2}}})", R"({"a":[{"x":1,"y":2}]})", true},
        match_case{R"({"a":{"$size":2}})", R"({"a":[1,[2,3]]})", true},
        match_case{R"({"a":{"$size":1}})", R"({"a":[1,[2,3]]})", false},
        match_case{R"({"a":{"%type":"string"}})", R"({"a":[1,"x"]})", true},
        match_case{R"({"a":{"%type":"array"}})", R"({"a":[1]})", true},
        match_case{R"({"a":{"%type":"number"}})", R"({"a":{"$numberLong":"1"}})", true},
        match_case{R"({"a":{"%type":[2,16]}})", R"({"a":1})", true},
        match_case{R"({"a":{"$all":[1,2]}})", R"({"a":[2,3,1]})", true},
        match_case{R"({"a":{"$all":[1,4]}})", R"({"a":[2,3,1]})", false},
        match_case{R"({})", R"({"anything":1})", true}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

TEST(matcher_test, positional_index_is_the_first_matching_element) {
  auto m = matcher::compile(doc(R"({"items.productId":7})"));
  ASSERT_TRUE(m.has_value());
  match_details details;
  EXPECT_TRUE(
      m->matches(doc(R"({"items":[{"productId":1},{"productId":7},{"productId":7}]})"), &details));
  EXPECT_EQ(details.array_index, 1u);

  auto scalar = matcher::compile(doc(R"({"tags":"b"})"));
  match_details d2;
  EXPECT_TRUE(scalar->matches(doc(R"({"tags":["a","b"]})"), &d2));
  EXPECT_EQ(d2.array_index, 1u);

  auto em = matcher::compile(doc(R"({"a":{"$elemMatch":{"x":{"$gt":1}}}})"));
  match_details d3;
  EXPECT_TRUE(em->matches(doc(R"({"a":[{"x":0},{"x":1},{"x":2}]})"), &d3));
  EXPECT_EQ(d3.array_index, 2u);
}

struct error_case {
  const char* filter;
  op_set ops;
  const char* pointer;
  const char* message_part;
};

class compile_error_test : public ::testing::TestWithParam<error_case> {};

TEST_P(compile_error_test, names_the_pointer_and_reason) {
  const auto& c = GetParam();
  auto m = matcher::compile(doc(c.filter), c.ops);
  ASSERT_FALSE(m.has_value()) << c.filter;
  EXPECT_EQ(m.error().pointer, c.pointer);
  EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    cases, compile_error_test,
    ::testing::Values(
        error_case{R"({"a":{"$foo":1}})", op_set::full, "/a/$foo", "unknown operator: $foo"},
        error_case{R"({"$foo":[]})", op_set::full, "/$foo", "unknown top level operator"},
        error_case{R"({"$or":[]})", op_set::full, "/$or", "nonempty array"},
        error_case{R"({"$and":[1]})", op_set::full, "/$and/0", "must be objects"},
        error_case{R"({"a":{"$in":5}})", op_set::full, "/a/$in", "needs an array"},
        error_case{R"({"a":{"$not":5}})", op_set::full, "/a/$not", "$not needs"},
        error_case{R"({"a":{"$size":-1}})", op_set::full, "/a/$size", "$size"},
        error_case{R"({"a":{"%type":"nope"}})", op_set::full, "/a/$type", "unknown type"},
        error_case{R"({"x":{"$or":[{"b":{"$gt":1,"c":2}}]}})", op_set::full, "/x/$or",
                   "unknown operator: $or"},
        error_case{R"({"$or":[{"b":{"$gt":1,"c":2}}]})", op_set::full, "/$or/0/b/c",
                   "unknown operator: c"},
        error_case{R"({"a":{"$size":1}})", op_set::mapping_subset, "/a/$size", "not supported"},
        error_case{R"({"$nor":[{"a":1}]})", op_set::mapping_subset, "/$nor", "not supported"},
        error_case{R"({"a/b":{"$elemMatch":{}}})", op_set::mapping_subset, "/a~1b/$elemMatch",
                   "not supported"}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

TEST(matcher_test, reports_paths_and_equalities) {
  auto m = matcher::compile(
      doc(R"({"status":{"$nin":["X"]},"$or":[{"address.city":"Oslo"},{"status":"Y"}],)"
          R"("$and":[{"k":{"$eq":3}}],"t":5})"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->paths(), (std::vector<std::string>{"status", "address.city", "k", "t"}));
  const auto eq = m->equalities();
  ASSERT_EQ(eq.size(), 2u);
  EXPECT_EQ(eq[0].first, "k");
  EXPECT_EQ(eq[1].first, "t");
}

TEST(matcher_test, paths_overlap_at_component_boundaries) {
  EXPECT_TRUE(paths_overlap("address", "address.city"));
  EXPECT_TRUE(paths_overlap("address.city", "address"));
  EXPECT_TRUE(paths_overlap("a.b", "a.b"));
  EXPECT_FALSE(paths_overlap("address", "addresses"));
  EXPECT_FALSE(paths_overlap("a.b", "a.c"));
}

}  // namespace
}  // namespace denormd::query
