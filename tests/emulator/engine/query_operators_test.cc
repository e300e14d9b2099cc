// The operators the test server adds to the production matcher ($nor $elemMatch $size $type
// $all), their compile errors, and the positional index.
#include "query_operators.h"

#include "test_support.h"

namespace mongo_emulator::engine::testing {
namespace {

namespace bson = denormd::bson;

// libbson's JSON reader takes "$type" for legacy binary syntax, so tests spell the query
// operator "%type" and rename it after parsing.
void rename_type_keys(bson::document& d) {
  for (auto& f : d) {
    if (f.name == "%type") f.name = "$type";
    if (f.val.is_document()) rename_type_keys(f.val.as_document());
  }
}

bson::document query_doc(const char* json) {
  auto d = doc(json);
  rename_type_keys(d);
  return d;
}

struct match_case {
  const char* filter;
  const char* document;
  bool expected;
};

class query_operators_match : public ::testing::TestWithParam<match_case> {};

TEST_P(query_operators_match, evaluates_like_mongodb) {
  const auto& c = GetParam();
  auto m = compile_query(query_doc(c.filter));
  ASSERT_TRUE(m.has_value()) << c.filter << ": " << m.error().message;
  EXPECT_EQ(m->matches(doc(c.document)), c.expected) << c.filter << " on " << c.document;
}

INSTANTIATE_TEST_SUITE_P(
    cases, query_operators_match,
    ::testing::Values(
        match_case{R"({"$nor":[{"a":1},{"b":2}]})", R"({"a":3})", true},
        match_case{R"({"$nor":[{"a":1},{"b":2}]})", R"({"b":2})", false},
        match_case{R"({"a":{"$elemMatch":{"$gte":5,"$lt":6}}})", R"({"a":[1,10]})", false},
        match_case{R"({"a":{"$elemMatch":{"$gte":5,"$lt":9}}})", R"({"a":[1,7]})", true},
        match_case{R"({"a":{"$elemMatch":{"x":1,"y":2}}})", R"({"a":[{"x":1},{"y":2}]})", false},
        match_case{R"({"a":{"$elemMatch":{"x":1,"y":2}}})", R"({"a":[{"x":1,"y":2}]})", true},
        match_case{R"({"a":{"$elemMatch":{"$or":[{"x":1},{"y":2}]}}})", R"({"a":[{"y":2}]})", true},
        match_case{R"({"a":{"$elemMatch":{"x":{"$size":1}}}})", R"({"a":[{"x":[0]}]})", true},
        match_case{R"({"a":{"$size":2}})", R"({"a":[1,[2,3]]})", true},
        match_case{R"({"a":{"$size":1}})", R"({"a":[1,[2,3]]})", false},
        match_case{R"({"a.b":{"$size":1}})", R"({"a":[{"b":[1,2]},{"b":[3]}]})", true},
        match_case{R"({"a":{"%type":"string"}})", R"({"a":[1,"x"]})", true},
        match_case{R"({"a":{"%type":"string"}})", R"({"a":[1,["x"]]})", false},
        match_case{R"({"a":{"%type":"array"}})", R"({"a":[1]})", true},
        match_case{R"({"a":{"%type":"number"}})", R"({"a":{"$numberLong":"1"}})", true},
        match_case{R"({"a":{"%type":[2,16]}})", R"({"a":1})", true},
        match_case{R"({"a":{"$all":[1,2]}})", R"({"a":[2,3,1]})", true},
        match_case{R"({"a":{"$all":[1,4]}})", R"({"a":[2,3,1]})", false},
        match_case{R"({"a":{"$all":[]}})", R"({"a":[1]})", false},
        match_case{R"({"a":{"$not":{"$size":1}}})", R"({"a":[1,2]})", true}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

struct error_case {
  const char* filter;
  const char* pointer;
  const char* message_part;
};

class query_operators_error : public ::testing::TestWithParam<error_case> {};

TEST_P(query_operators_error, names_the_pointer_and_reason) {
  const auto& c = GetParam();
  auto m = compile_query(query_doc(c.filter));
  ASSERT_FALSE(m.has_value()) << c.filter;
  EXPECT_EQ(m.error().pointer, c.pointer);
  EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    cases, query_operators_error,
    ::testing::Values(
        error_case{R"({"a":{"$foo":1}})", "/a/$foo", "unknown operator: $foo"},
        error_case{R"({"$foo":[]})", "/$foo", "unknown top level operator"},
        error_case{R"({"x":{"$or":[{"b":1}]}})", "/x/$or", "unknown operator: $or"},
        error_case{R"({"$nor":[]})", "/$nor", "$nor must be a nonempty array"},
        error_case{R"({"$nor":[1]})", "/$nor/0", "$nor argument's entries must be objects"},
        error_case{R"({"$nor":[{"a":{"$bad":1}}]})", "/$nor/0/a/$bad", "unknown operator: $bad"},
        error_case{R"({"a":{"$size":-1}})", "/a/$size", "$size"},
        error_case{R"({"a":{"$size":1.5}})", "/a/$size", "$size"},
        error_case{R"({"a":{"%type":"nope"}})", "/a/$type", "unknown type"},
        error_case{R"({"a":{"%type":[]}})", "/a/$type", "at least one type"},
        error_case{R"({"a":{"$all":1}})", "/a/$all", "$all needs an array"},
        error_case{R"({"a":{"$elemMatch":1}})", "/a/$elemMatch", "needs an Object"},
        error_case{R"({"a":{"$elemMatch":{"$gt":1,"x":2}}})", "/a/$elemMatch/x",
                   "unknown operator: x"},
        error_case{R"({"a":{"$elemMatch":{"x":{"$bad":1}}}})", "/a/$elemMatch/x/$bad",
                   "unknown operator: $bad"}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

std::optional<std::size_t> index_of(const char* filter, const char* document) {
  auto m = compile_query(query_doc(filter));
  EXPECT_TRUE(m.has_value()) << filter;
  if (!m) return std::nullopt;
  const auto d = doc(document);
  EXPECT_TRUE(m->matches(d)) << filter << " on " << document;
  return positional_index(*m, d);
}

TEST(query_operators, positional_index_is_the_first_matching_element) {
  EXPECT_EQ(index_of(R"({"items.productId":7})",
                     R"({"items":[{"productId":1},{"productId":7},{"productId":7}]})"),
            1u);
  EXPECT_EQ(index_of(R"({"tags":"b"})", R"({"tags":["a","b"]})"), 1u);
  EXPECT_EQ(
      index_of(R"({"a":{"$elemMatch":{"x":{"$gt":1}}}})", R"({"a":[{"x":0},{"x":1},{"x":2}]})"),
      2u);
  EXPECT_EQ(index_of(R"({"a":{"$all":[3,2]}})", R"({"a":[1,2,3]})"), 2u);
  EXPECT_EQ(index_of(R"({"a":{"$gt":1,"$lt":5}})", R"({"a":[0,7,3]})"), 1u);
  EXPECT_EQ(index_of(R"({"a.b":null})", R"({"a":[{"b":1},{"c":2}]})"), 1u);
  EXPECT_EQ(index_of(R"({"x.a":{"$size":2}})", R"({"x":[{"a":[1]},{"a":[1,2]}]})"), 1u);
}

TEST(query_operators, positional_index_follows_the_filter_order) {
  // The first predicate that goes through an array decides; negations never do.
  EXPECT_EQ(index_of(R"({"k":1,"a":{"$ne":0},"b":5})", R"({"k":1,"a":[1,2],"b":[4,5]})"), 1u);
  EXPECT_EQ(index_of(R"({"$and":[{"a":2},{"b":5}]})", R"({"a":[1,2],"b":[5]})"), 1u);
  EXPECT_EQ(index_of(R"({"$or":[{"a":9},{"b":5}]})", R"({"a":[1,2],"b":[4,5]})"), 1u);
  EXPECT_EQ(index_of(R"({"a":1})", R"({"a":1})"), std::nullopt);
  EXPECT_EQ(index_of(R"({"a":{"$nin":[3]}})", R"({"a":[1,2]})"), std::nullopt);
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
