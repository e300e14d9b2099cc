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
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({"a":3})", true},
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({})", true},
        match_case{R"({"a":{"$not":{"$gt":5}}})", R"({"a":[1,7]})", false},
        match_case{R"({})", R"({"anything":1})", true}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

struct error_case {
  const char* filter;
  const char* pointer;
  const char* message_part;
};

class compile_error_test : public ::testing::TestWithParam<error_case> {};

TEST_P(compile_error_test, names_the_pointer_and_reason) {
  const auto& c = GetParam();
  auto m = matcher::compile(doc(c.filter));
  ASSERT_FALSE(m.has_value()) << c.filter;
  EXPECT_EQ(m.error().pointer, c.pointer);
  EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    cases, compile_error_test,
    ::testing::Values(
        error_case{R"({"a":{"$foo":1}})", "/a/$foo", "operator $foo is not supported here"},
        error_case{R"({"$foo":[]})", "/$foo", "operator $foo is not supported here"},
        error_case{R"({"$or":[]})", "/$or", "nonempty array"},
        error_case{R"({"$and":[1]})", "/$and/0", "must be objects"},
        error_case{R"({"a":{"$in":5}})", "/a/$in", "needs an array"},
        error_case{R"({"a":{"$nin":[{"$gt":1}]}})", "/a/$nin/0", "cannot nest $ under $nin"},
        error_case{R"({"a":{"$not":5}})", "/a/$not", "$not needs"},
        error_case{R"({"x":{"$or":[{"b":{"$gt":1,"c":2}}]}})", "/x/$or", "$or is not supported"},
        error_case{R"({"$or":[{"b":{"$gt":1,"c":2}}]})", "/$or/0/b/c", "unknown operator: c"},
        error_case{R"({"":1})", "/", "empty field name"},
        // MongoDB operators outside the mapping language (the test server adds them).
        error_case{R"({"a":{"$size":1}})", "/a/$size", "not supported"},
        error_case{R"({"$nor":[{"a":1}]})", "/$nor", "not supported"},
        error_case{R"({"a/b":{"$elemMatch":{}}})", "/a~1b/$elemMatch", "not supported"}),
    [](const auto& param) { return "case_" + std::to_string(param.index); });

// An extension with one field operator, $even, and one top-level operator, $never.
class parity_extension final : public operator_extension {
 public:
  struct even final : predicate {
    std::string path;
    bool matches(const bson::document& d) const override {
      const auto* v = d.get(path);
      return v != nullptr && v->is_number() && static_cast<long>(v->to_double()) % 2 == 0;
    }
  };
  struct never final : predicate {
    bool matches(const bson::document&) const override { return false; }
    std::vector<std::string> paths() const override { return {"hidden"}; }
  };
  expected<predicate_ptr, compile_error> field_operator(const std::string& path,
                                                        const std::string& op,
                                                        const bson::value& arg,
                                                        const std::string& pointer) const override {
    if (op != "$even") return predicate_ptr();
    if (!arg.is<bool>()) return unexpected<compile_error>{{pointer, "$even needs true", 2}};
    auto p = std::make_shared<even>();
    p->path = path;
    return predicate_ptr(p);
  }
  expected<predicate_ptr, compile_error> top_level_operator(const std::string& op,
                                                            const bson::value&,
                                                            const std::string&) const override {
    if (op != "$never") return predicate_ptr();
    return predicate_ptr(std::make_shared<never>());
  }
};

TEST(matcher_test, an_extension_adds_operators_and_its_errors) {
  const parity_extension ext;
  auto m = matcher::compile(
      doc(R"({"a":{"$even":true,"$gt":1},"$or":[{"b":1},{"c":{"$even":true}}]})"), ext);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_TRUE(m->matches(doc(R"({"a":4,"b":1})")));
  EXPECT_FALSE(m->matches(doc(R"({"a":3,"b":1})")));
  EXPECT_FALSE(m->matches(doc(R"({"a":0,"b":1})")));  // $gt still applies
  EXPECT_TRUE(m->matches(doc(R"({"a":2,"c":6})")));
  auto odd = matcher::compile(doc(R"({"a":{"$not":{"$even":true}}})"), ext);
  ASSERT_TRUE(odd.has_value());
  EXPECT_TRUE(odd->matches(doc(R"({"a":3})")));
  EXPECT_FALSE(odd->matches(doc(R"({"a":2})")));

  auto never = matcher::compile(doc(R"({"x":1,"$never":1})"), ext);
  ASSERT_TRUE(never.has_value());
  EXPECT_FALSE(never->matches(doc(R"({"x":1})")));
  EXPECT_EQ(never->paths(), (std::vector<std::string>{"x", "hidden"}));

  auto bad_arg = matcher::compile(doc(R"({"a":{"$not":{"$even":1}}})"), ext);
  ASSERT_FALSE(bad_arg.has_value());
  EXPECT_EQ(bad_arg.error().pointer, "/a/$not/$even");
  // With an extension, what neither knows is MongoDB's "unknown operator".
  auto unknown = matcher::compile(doc(R"({"a":{"$odd":true}})"), ext);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().message, "unknown operator: $odd");
  auto top = matcher::compile(doc(R"({"$always":[]})"), ext);
  ASSERT_FALSE(top.has_value());
  EXPECT_EQ(top.error().message, "unknown top level operator: $always");
  // Without it, the mapping language stands alone.
  EXPECT_FALSE(matcher::compile(doc(R"({"a":{"$even":true}})")).has_value());
}

TEST(matcher_test, value_tests_agree_with_matching) {
  EXPECT_TRUE(test_value("$eq", bson::value(1.0), bson::value(1)));
  EXPECT_FALSE(test_value("$eq", bson::value(bson::array{1}), bson::value(1)));  // no expansion
  EXPECT_TRUE(test_value("$gte", bson::value("b"), bson::value("a")));
  EXPECT_FALSE(test_value("$gt", bson::value("b"), bson::value(1)));  // type brackets
  EXPECT_TRUE(test_value("$in", bson::value(2), bson::value(bson::array{1, 2})));
  EXPECT_TRUE(accepts_missing("$eq", bson::value(bson::null_t{})));
  EXPECT_FALSE(accepts_missing("$gt", bson::value(bson::null_t{})));
  EXPECT_TRUE(accepts_missing("$in", bson::value(bson::array{1, bson::null_t{}})));
}

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
