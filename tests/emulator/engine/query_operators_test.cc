// The operators the test server adds to the production matcher ($nor $elemMatch $size $type
// $all, regexes), their compile errors, the operators it refuses, and the positional index.
#include "query_operators.h"

#include "test_support.h"

namespace mongo_emulator::engine::testing {
namespace {

namespace bson = denormd::bson;

// libbson's JSON reader takes "$type", "$regex" and "$options" for legacy binary and regex
// syntax, so tests spell the query operators "%type", "%regex" and "%options" and rename them
// after parsing.
void rename_type_keys(bson::document& d) {
  for (auto& f : d) {
    if (f.name == "%type") f.name = "$type";
    if (f.name == "%regex") f.name = "$regex";
    if (f.name == "%options") f.name = "$options";
    if (f.val.is_document()) rename_type_keys(f.val.as_document());
    if (f.val.is_array()) {
      for (auto& item : f.val.as_array()) {
        if (item.is_document()) rename_type_keys(item.as_document());
      }
    }
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

// A regex in a filter matches strings as MongoDB's RegexMatchExpression does (never silently
// nothing): a regex literal as a field's value, $regex with $options, and regexes in $in, $nin,
// $all, $not and $elemMatch. {"$regularExpression": ...} is a BSON regex value.
INSTANTIATE_TEST_SUITE_P(
    regexes, query_operators_match,
    ::testing::Values(
        // A literal: a substring search, in a string or a leaf array's strings.
        match_case{R"({"a":{"$regularExpression":{"pattern":"b+","options":""}}})",
                   R"({"a":"abbc"})", true},
        match_case{R"({"a":{"$regularExpression":{"pattern":"^b","options":""}}})",
                   R"({"a":"abbc"})", false},
        match_case{R"({"a":{"$regularExpression":{"pattern":"^x","options":""}}})",
                   R"({"a":[1,"y","xz"]})", true},
        match_case{R"({"a.b":{"$regularExpression":{"pattern":"^x$","options":""}}})",
                   R"({"a":[{"b":"q"},{"b":"x"}]})", true},
        // Not numbers, not a missing field; a stored regex only when identical.
        match_case{R"({"a":{"$regularExpression":{"pattern":"1","options":""}}})", R"({"a":1})",
                   false},
        match_case{R"({"a":{"$regularExpression":{"pattern":".*","options":""}}})", R"({"b":1})",
                   false},
        match_case{R"({"a":{"$regularExpression":{"pattern":"x","options":"i"}}})",
                   R"({"a":{"$regularExpression":{"pattern":"x","options":"i"}}})", true},
        match_case{R"({"a":{"$regularExpression":{"pattern":"x","options":"i"}}})",
                   R"({"a":{"$regularExpression":{"pattern":"x","options":""}}})", false},
        match_case{R"({"a":{"$regularExpression":{"pattern":"^sy","options":""}}})",
                   R"({"a":{"$symbol":"sym"}})", true},
        // $eq with a regex compares the value, as MongoDB's $eq does.
        match_case{R"({"a":{"$eq":{"$regularExpression":{"pattern":"x","options":""}}}})",
                   R"({"a":"x"})", false},
        // Options: i, m, s, x (u is accepted).
        match_case{R"({"a":{"%regex":"^AB","%options":"i"}})", R"({"a":"abc"})", true},
        match_case{R"({"a":{"%regex":"^AB"}})", R"({"a":"abc"})", false},
        match_case{R"({"a":{"%regex":"^two$","%options":"m"}})", R"({"a":"one\ntwo\nthree"})",
                   true},
        match_case{R"({"a":{"%regex":"^two$"}})", R"({"a":"one\ntwo\nthree"})", false},
        match_case{R"({"a":{"%regex":"one.two","%options":"s"}})", R"({"a":"one\ntwo"})", true},
        match_case{R"({"a":{"%regex":"one.two"}})", R"({"a":"one\ntwo"})", false},
        match_case{R"({"a":{"%regex":"a b c # spaced\n d","%options":"x"}})", R"({"a":"abcd"})",
                   true},
        match_case{R"({"a":{"%regex":"a[ ]b","%options":"xu"}})", R"({"a":"a b"})", true},
        // PCRE's `$` without m also matches before a final newline.
        match_case{R"({"a":{"%regex":"end$"}})", R"({"a":"the end\n"})", true},
        match_case{R"({"a":{"%regex":"end$"}})", R"({"a":"the end\nx"})", false},
        // `{` that starts no quantifier is a literal, and `[]a]` a class holding `]`.
        match_case{R"({"a":{"%regex":"{x}"}})", R"({"a":"a{x}"})", true},
        match_case{R"({"a":{"%regex":"^[]a]+$"}})", R"({"a":"]a]"})", true},
        match_case{R"({"a":{"%regex":"^a{2}$"}})", R"({"a":"aa"})", true},
        // $options before $regex, and a regex given to $regex.
        match_case{R"({"a":{"%options":"i","%regex":"X"}})", R"({"a":"x"})", true},
        match_case{R"({"a":{"%regex":{"$regularExpression":{"pattern":"X","options":"i"}}}})",
                   R"({"a":"x"})", true},
        // With other operators on the same path.
        match_case{R"({"a":{"%regex":"^x","$ne":"xy"}})", R"({"a":"xy"})", false},
        // $in / $nin: regexes and values together; null still matches a missing field.
        match_case{R"({"a":{"$in":[{"$regularExpression":{"pattern":"^x","options":""}},5]}})",
                   R"({"a":"xyz"})", true},
        match_case{R"({"a":{"$in":[{"$regularExpression":{"pattern":"^x","options":""}},5]}})",
                   R"({"a":5})", true},
        match_case{R"({"a":{"$in":[{"$regularExpression":{"pattern":"^x","options":""}},5]}})",
                   R"({"a":"yx"})", false},
        match_case{R"({"a":{"$in":[{"$regularExpression":{"pattern":"^x","options":""}},null]}})",
                   R"({"b":1})", true},
        match_case{R"({"a":{"$nin":[{"$regularExpression":{"pattern":"^x","options":""}}]}})",
                   R"({"a":["y","xa"]})", false},
        match_case{R"({"a":{"$nin":[{"$regularExpression":{"pattern":"^x","options":""}}]}})",
                   R"({"a":"y"})", true},
        match_case{R"({"a":{"$nin":[{"$regularExpression":{"pattern":"^x","options":""}}]}})",
                   R"({"b":1})", true},
        // $all, $not, $elemMatch, $or and $nor.
        match_case{R"({"a":{"$all":[{"$regularExpression":{"pattern":"^x","options":""}},"y"]}})",
                   R"({"a":["y","xa"]})", true},
        match_case{R"({"a":{"$all":[{"$regularExpression":{"pattern":"^x","options":""}},"y"]}})",
                   R"({"a":["y","a"]})", false},
        match_case{R"({"a":{"$not":{"$regularExpression":{"pattern":"^x","options":""}}}})",
                   R"({"a":"xa"})", false},
        match_case{R"({"a":{"$not":{"$regularExpression":{"pattern":"^x","options":""}}}})",
                   R"({"a":"ax"})", true},
        match_case{R"({"a":{"$not":{"%regex":"^X","%options":"i"}}})", R"({"a":"xa"})", false},
        match_case{R"({"a":{"$elemMatch":{"%regex":"^x","$ne":"xy"}}})", R"({"a":["xy","xz"]})",
                   true},
        match_case{
            R"({"a":{"$elemMatch":{"b":{"$regularExpression":{"pattern":"^x","options":""}}}}})",
            R"({"a":[{"b":"y"},{"b":"x"}]})", true},
        match_case{R"({"$or":[{"a":1},{"b":{"$regularExpression":{"pattern":"z","options":""}}}]})",
                   R"({"b":"xyz"})", true},
        match_case{R"({"$nor":[{"b":{"$regularExpression":{"pattern":"z","options":""}}}]})",
                   R"({"b":"xyz"})", false}),
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

struct code_case {
  const char* filter;
  int code;
  const char* message_part;
};

class query_operators_code : public ::testing::TestWithParam<code_case> {};

TEST_P(query_operators_code, fails_with_mongodbs_code) {
  const auto& c = GetParam();
  auto m = compile_query(query_doc(c.filter));
  ASSERT_FALSE(m.has_value()) << c.filter;
  EXPECT_EQ(m.error().code, c.code) << m.error().message;
  EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().message;
}

// Regex errors as MongoDB's parser gives them, and operators the emulator refuses (238) rather
// than calling them unknown.
INSTANTIATE_TEST_SUITE_P(
    cases, query_operators_code,
    ::testing::Values(
        code_case{R"({"a":{"%regex":"x","%options":"g"}})", 51108,
                  " invalid flag in regex options: g"},
        code_case{R"({"a":{"$regularExpression":{"pattern":"(","options":""}}})", 51091,
                  "Regular expression is invalid"},
        code_case{R"({"a":{"%regex":{"$regularExpression":{"pattern":"x","options":"i"}},
                       "%options":"m"}})",
                  51075, "options set in both $regex and $options"},
        code_case{R"({"a":{"%options":"m",
                       "%regex":{"$regularExpression":{"pattern":"x","options":"i"}}}})",
                  51074, "options set in both $regex and $options"},
        code_case{R"({"a":{"%options":"i"}})", 2, "$options needs a $regex"},
        code_case{R"({"a":{"%regex":1}})", 2, "$regex has to be a string"},
        code_case{R"({"a":{"%regex":"x","%options":1}})", 2, "$options has to be a string"},
        code_case{R"({"a":{"$ne":{"$regularExpression":{"pattern":"x","options":""}}}})", 2,
                  "Can't have regex as arg to $ne."},
        code_case{R"({"a":{"$in":[{"$regularExpression":{"pattern":"x","options":""}},
                                   {"$gt":1}]}})",
                  2, "cannot nest $ under $in"},
        // PCRE-only syntax: refused, not matched differently.
        code_case{R"({"a":{"%regex":"(?<=a)b"}})", 238, "(?<="},
        code_case{R"({"a":{"%regex":"(?i)b"}})", 238, "(?i)"},
        code_case{R"({"a":{"%regex":"\\Ab"}})", 238, "\\A"},
        code_case{R"({"a":{"%regex":"a++"}})", 238, "++"},
        code_case{R"({"a":{"%regex":"\\p{L}"}})", 238, "\\p"},
        // Query operators the emulator does not implement.
        code_case{R"({"a":{"$mod":[2,0]}})", 238, "$mod"},
        code_case{R"({"$where":"this.a == 1"})", 238, "$where"},
        code_case{R"({"$text":{"$search":"x"}})", 238, "$text"},
        code_case{R"({"$jsonSchema":{"required":["a"]}})", 238, "$jsonSchema"},
        code_case{R"({"a":{"$bitsAllSet":1}})", 238, "$bitsAllSet"},
        code_case{R"({"a":{"$geoWithin":{}}})", 238, "$geoWithin"},
        code_case{R"({"$nor":[{"a":{"$mod":[2,0]}}]})", 238, "$mod"}),
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

TEST(query_operators, positional_index_through_regexes) {
  EXPECT_EQ(index_of(R"({"a":{"$regularExpression":{"pattern":"^x","options":""}}})",
                     R"({"a":["y","xa","xb"]})"),
            1u);
  EXPECT_EQ(index_of(R"({"a.b":{"%regex":"^X","%options":"i"}})",
                     R"({"a":[{"b":"y"},{"b":"y"},{"b":"x"}]})"),
            2u);
  EXPECT_EQ(index_of(R"({"a":{"$in":[{"$regularExpression":{"pattern":"^x","options":""}}]}})",
                     R"({"a":["y","xa"]})"),
            1u);
}

// A regex is a match, not an equality: no index lookup or upsert seeding takes it as a value.
TEST(query_operators, a_regex_is_not_an_equality) {
  auto m = compile_query(query_doc(R"({"a":{"$regularExpression":{"pattern":"^x","options":""}},
                                       "b":{"$in":[{"$regularExpression":{"pattern":"y","options":""}}]},
                                       "c":1})"));
  ASSERT_TRUE(m.has_value()) << m.error().message;
  const auto eqs = m->equalities();
  ASSERT_EQ(eqs.size(), 1U);
  EXPECT_EQ(eqs[0].first, "c");
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
