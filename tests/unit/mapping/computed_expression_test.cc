#include "mapping/computed_expression.h"

#include <gtest/gtest.h>

#include <set>

namespace denormd::mapping {
namespace {

computed_expression parsed(const std::string& text) {
  auto e = computed_expression::parse(json::parse(text), "/fields/f");
  EXPECT_TRUE(e.has_value()) << text << ": "
                             << (e ? ""
                                   : e.error().front().pointer + ": " + e.error().front().message);
  return *e;
}

std::vector<std::string> reads(const std::string& text) {
  return parsed(text).reads();
}

// The one error of an expression that must be refused.
expression_error refusal(const std::string& text) {
  auto e = computed_expression::parse(json::parse(text), "/fields/f");
  EXPECT_FALSE(e.has_value()) << text;
  if (e) return {};
  EXPECT_EQ(e.error().size(), 1u) << text;
  return e.error().front();
}

void expect_refusal(const std::string& text, const std::string& pointer,
                    const std::string& message_part) {
  const auto err = refusal(text);
  EXPECT_EQ(err.pointer, pointer) << text;
  EXPECT_NE(err.message.find(message_part), std::string::npos) << text << ": " << err.message;
}

using paths = std::vector<std::string>;

TEST(computed_expression_test, the_issue_examples_read_their_paths) {
  EXPECT_EQ(reads(R"({"$concat": ["$name", " <", "$email", ">"]})"), (paths{"email", "name"}));
  EXPECT_EQ(reads(R"({"$toUpper": {"$ifNull": ["$address.city", "unknown"]}})"),
            (paths{"address.city"}));
  EXPECT_EQ(reads(R"({"$multiply": ["$quantity", "$price"]})"), (paths{"price", "quantity"}));
}

TEST(computed_expression_test, canonical_text_is_compact_json_in_written_order) {
  const auto e = parsed(R"({ "$cond": { "then": "$b", "if": "$a",  "else": 1 } })");
  EXPECT_EQ(e.canonical_text(), R"({"$cond":{"then":"$b","if":"$a","else":1}})");
  EXPECT_FALSE(e.reads_whole_document());
}

TEST(computed_expression_test, paths_are_sorted_unique_and_folded_into_their_parents) {
  EXPECT_EQ(reads(R"({"$concat": ["$b", "$a.x", "$a", "$a.y", "$b", "$a-b", "$ab.c"]})"),
            (paths{"a", "a-b", "ab.c", "b"}));
  EXPECT_EQ(reads(R"({"$add": ["$x.y.z", "$x.y"]})"), (paths{"x.y"}));
}

TEST(computed_expression_test, root_and_current_alone_read_the_whole_document) {
  for (const char* text : {R"({"$toString": "$$ROOT"})", R"({"$eq": ["$$CURRENT", "$a"]})"}) {
    const auto e = parsed(text);
    EXPECT_TRUE(e.reads_whole_document()) << text;
    EXPECT_TRUE(e.reads().empty()) << text;
  }
  const auto e = parsed(R"({"$concat": ["$$CURRENT.a", "$$ROOT.b.c"]})");
  EXPECT_FALSE(e.reads_whole_document());
  EXPECT_EQ(e.reads(), (paths{"a", "b.c"}));
  EXPECT_EQ(reads(R"({"$ifNull": ["$a", "$$REMOVE"]})"), (paths{"a"}));
}

TEST(computed_expression_test, literal_is_data_and_reads_nothing) {
  EXPECT_EQ(reads(R"({"$literal": {"$lookup": "$a", "$$NOW": ["$b", {"x": 1, "$y": 2}]}})"),
            paths{});
  EXPECT_EQ(reads(R"({"$concat": [{"$literal": "$price"}, "$name"]})"), (paths{"name"}));
  EXPECT_EQ(reads(R"({"$multiply": ["$price", {"$numberDecimal": "1.19"}]})"), (paths{"price"}));
}

TEST(computed_expression_test, bound_variables_are_not_source_paths) {
  EXPECT_EQ(reads(R"({"$map": {"input": "$items", "in": "$$this.x"}})"), (paths{"items"}));
  EXPECT_EQ(reads(R"({"$map": {"input": "$items", "as": "it", "in": {"$add": ["$$it.q", "$k"]}}})"),
            (paths{"items", "k"}));
  EXPECT_EQ(reads(R"({"$filter": {"input": "$lines", "as": "l", "cond": {"$gt": ["$$l.q", "$min"]},
                                  "limit": "$max"}})"),
            (paths{"lines", "max", "min"}));
  EXPECT_EQ(reads(R"({"$reduce": {"input": "$lines", "initialValue": "$base",
                                  "in": {"$add": ["$$value", "$$this.q"]}}})"),
            (paths{"base", "lines"}));
  EXPECT_EQ(reads(R"({"$let": {"vars": {"total": {"$add": ["$a", "$b"]}, "rate": "$r"},
                               "in": {"$multiply": ["$$total", "$$rate", "$$CURRENT.c"]}}})"),
            (paths{"a", "b", "c", "r"}));
}

TEST(computed_expression_test, nested_bindings_see_their_enclosing_scopes) {
  // $let outside, $map inside reading both its own $$this and the outer $$tax.
  EXPECT_EQ(reads(R"({"$let": {"vars": {"tax": "$rate"},
      "in": {"$map": {"input": "$items", "as": "i",
        "in": {"$reduce": {"input": "$$i.parts", "initialValue": 0,
          "in": {"$add": ["$$value", {"$multiply": ["$$this.price", "$$tax"]}, "$$i.fee"]}}}}}}})"),
            (paths{"items", "rate"}));
}

TEST(computed_expression_test, variables_are_bound_only_inside_their_operator) {
  // $$this outside the $map, a $let variable used in its own vars, $$value outside $reduce.
  expect_refusal(R"({"$add": [{"$map": {"input": "$a", "in": "$$this"}}, "$$this"]})",
                 "/fields/f/$add/1", "undefined variable $$this");
  expect_refusal(R"({"$let": {"vars": {"x": 1, "y": "$$x"}, "in": "$$y"}})",
                 "/fields/f/$let/vars/y", "undefined variable $$x");
  expect_refusal(R"({"$filter": {"input": "$a", "as": "v", "cond": "$$value"}})",
                 "/fields/f/$filter/cond", "undefined variable $$value");
  expect_refusal(R"({"$map": {"input": "$$item", "as": "item", "in": "$$item"}})",
                 "/fields/f/$map/input", "undefined variable $$item");
}

TEST(computed_expression_test, unknown_operators_are_refused_with_a_suggestion) {
  expect_refusal(R"({"$toupper": "$a"})", "/fields/f/$toupper",
                 "operator $toupper is not allowed in computed fields (did you mean $toUpper?)");
  expect_refusal(R"({"$concat": ["$a", {"$substr": ["$b", 0, 2]}]})", "/fields/f/$concat/1/$substr",
                 "(did you mean $substrCP?)");
  const auto err = refusal(R"({"$sum": "$a"})");
  EXPECT_EQ(err.pointer, "/fields/f/$sum");
  EXPECT_NE(err.message.find("$sum is not allowed"), std::string::npos);
  EXPECT_EQ(refusal(R"({"$regexMatch": {"input": "$a"}})").message.find("did you mean"),
            std::string::npos);
}

TEST(computed_expression_test, javascript_is_refused) {
  for (const char* op : {"$function", "$accumulator", "$where"}) {
    expect_refusal(std::string(R"({"$toUpper": {")") + op + R"(": {"body": "x"}}})",
                   std::string("/fields/f/$toUpper/") + op, "server-side JavaScript");
  }
  expect_refusal(R"({"$eq": ["$a", {"$code": "function(){}"}]})", "/fields/f/$eq/1/$code",
                 "server-side JavaScript");
}

TEST(computed_expression_test, non_deterministic_values_are_refused) {
  expect_refusal(R"({"$multiply": [{"$rand": {}}, 10]})", "/fields/f/$multiply/0/$rand",
                 "$rand is not deterministic");
  expect_refusal(R"({"$eq": [{"$sampleRate": 0.5}, true]})", "/fields/f/$eq/0/$sampleRate",
                 "not deterministic");
  expect_refusal(R"({"$year": "$$NOW"})", "/fields/f/$year", "$$NOW is not deterministic");
  expect_refusal(R"({"$toString": ["$$CLUSTER_TIME"]})", "/fields/f/$toString/0",
                 "$$CLUSTER_TIME is not deterministic");
}

TEST(computed_expression_test, stages_are_not_expressions) {
  for (const char* stage : {"$lookup", "$match", "$out", "$merge", "$group", "$unionWith"}) {
    expect_refusal(std::string(R"({"$size": {")") + stage + R"(": {}}})",
                   std::string("/fields/f/$size/") + stage, "is an aggregation stage");
  }
}

TEST(computed_expression_test, an_expression_object_has_exactly_one_operator) {
  expect_refusal(R"({"$toUpper": "$a", "$toLower": "$b"})", "/fields/f",
                 "has 2 operators ($toUpper, $toLower...): an expression object has exactly one");
  expect_refusal(R"({"$concat": [{"x": "$a", "$toUpper": "$b"}]})", "/fields/f/$concat/0",
                 "mixes the operator $toUpper with the plain field \"x\"");
  expect_refusal(R"({"$concat": [{"$toUpper": "$b", "x": "$a"}]})", "/fields/f/$concat/0",
                 "mixes the operator $toUpper with the plain field \"x\"");
  // An object literal (no $ keys) is fine, and its values are expressions.
  EXPECT_EQ(reads(R"({"$ifNull": ["$a", {"city": "$b.c", "n": 1}]})"), (paths{"a", "b.c"}));
}

TEST(computed_expression_test, invalid_field_paths_are_refused) {
  expect_refusal(R"({"$toUpper": "$"})", "/fields/f/$toUpper", "\"$\" is not a valid field path");
  expect_refusal(R"({"$toUpper": "$a..b"})", "/fields/f/$toUpper", "has an empty component");
  expect_refusal(R"({"$toUpper": "$.a"})", "/fields/f/$toUpper", "has an empty component");
  expect_refusal(R"({"$toUpper": "$a.$b"})", "/fields/f/$toUpper", "starting with '$'");
  expect_refusal(R"({"$toUpper": "$$ROOT..a"})", "/fields/f/$toUpper", "has an empty component");
  expect_refusal(R"({"$toUpper": "$$"})", "/fields/f/$toUpper", "undefined variable");
}

TEST(computed_expression_test, undefined_variables_are_refused_with_a_suggestion) {
  expect_refusal(R"({"$toUpper": "$$root.a"})", "/fields/f/$toUpper",
                 "uses the undefined variable $$root (did you mean $$ROOT?)");
  expect_refusal(R"({"$toUpper": "$$USER_ROLES"})", "/fields/f/$toUpper", "undefined variable");
}

TEST(computed_expression_test, named_arguments_are_checked) {
  auto typo = computed_expression::parse(
      json::parse(R"({"$cond": {"if": "$a", "then": 1, "esle": 2}})"), "/fields/f");
  ASSERT_FALSE(typo.has_value());
  ASSERT_EQ(typo.error().size(), 2u);
  EXPECT_EQ(typo.error()[0].pointer, "/fields/f/$cond/esle");
  EXPECT_NE(typo.error()[0].message.find("$cond has no argument \"esle\" (did you mean \"else\"?)"),
            std::string::npos);
  EXPECT_EQ(typo.error()[1].pointer, "/fields/f/$cond/else");
  EXPECT_NE(typo.error()[1].message.find("requires the argument"), std::string::npos);
  expect_refusal(R"({"$convert": {"input": "$a"}})", "/fields/f/$convert/to",
                 "$convert requires the argument \"to\"");
  expect_refusal(R"({"$map": ["$a", "$$this"]})", "/fields/f/$map",
                 "$map takes an object of named arguments (input as in), not an array");
  expect_refusal(R"({"$map": {"input": "$a", "as": "Item", "in": 1}})", "/fields/f/$map/as",
                 "must name a variable");
  expect_refusal(R"({"$let": {"vars": {"_x": 1}, "in": 1}})", "/fields/f/$let/vars/_x",
                 "is not a valid variable name");
  expect_refusal(R"({"$switch": {"branches": [{"case": "$a"}]}})", "/fields/f/$switch/branches/0",
                 "a $switch branch is an object");
  // $cond also takes an array, $year a plain expression.
  EXPECT_EQ(reads(R"({"$cond": ["$a", "$b", "$c"]})"), (paths{"a", "b", "c"}));
  EXPECT_EQ(reads(R"({"$year": "$at"})"), (paths{"at"}));
  EXPECT_EQ(reads(R"({"$year": {"date": "$at", "timezone": "$tz"}})"), (paths{"at", "tz"}));
  EXPECT_EQ(reads(R"({"$switch": {"branches": [{"case": {"$gt": ["$a", 1]}, "then": "$b"}],
                                  "default": "$c"}})"),
            (paths{"a", "b", "c"}));
}

TEST(computed_expression_test, every_error_is_reported_not_just_the_first) {
  auto e = computed_expression::parse(
      json::parse(R"({"$concat": [{"$rand": {}}, "$$NOW", {"$toupper": "$a"}]})"), "/fields/f");
  ASSERT_FALSE(e.has_value());
  ASSERT_EQ(e.error().size(), 3u);
  EXPECT_EQ(e.error()[0].pointer, "/fields/f/$concat/0/$rand");
  EXPECT_EQ(e.error()[1].pointer, "/fields/f/$concat/1");
  EXPECT_EQ(e.error()[2].pointer, "/fields/f/$concat/2/$toupper");
}

TEST(computed_expression_test, a_field_is_an_expression_object) {
  expect_refusal(R"("$a")", "/fields/f", "one expression object, not a string");
  expect_refusal(R"([{"$toUpper": "$a"}])", "/fields/f", "not an array");
}

// {"$abs": {"$abs": ... "$a"}}: each $abs is one level (its argument is not an array).
std::string nested_abs(int levels) {
  std::string text = "\"$a\"";
  for (int i = 0; i < levels; ++i)
    text = "{\"$abs\": " + text + "}";
  return text;
}

TEST(computed_expression_test, depth_is_bounded_exactly_at_the_limit) {
  EXPECT_EQ(reads(nested_abs(max_expression_depth)), (paths{"a"}));
  std::string pointer = "/fields/f";
  for (int i = 0; i < max_expression_depth; ++i)
    pointer += "/$abs";
  expect_refusal(nested_abs(max_expression_depth + 1), pointer,
                 "deeper than 50 levels (the limit of computed fields)");
}

TEST(computed_expression_test, literal_data_counts_towards_the_depth) {
  // The expression object is level 1: 49 arrays inside $literal reach level 50, 50 reach 51.
  std::string data = "1";
  for (int i = 0; i < max_expression_depth - 1; ++i)
    data = "[" + data + "]";
  EXPECT_TRUE(
      computed_expression::parse(json::parse("{\"$literal\": " + data + "}"), "").has_value());
  const auto err = refusal("{\"$literal\": [" + data + "]}");
  EXPECT_NE(err.message.find("deeper than 50 levels"), std::string::npos);
}

TEST(computed_expression_test, the_operator_table_lists_issue_33_operators_by_family) {
  const auto ops = expression_operators();
  EXPECT_EQ(ops.size(), 49u);
  std::set<std::string_view> names;
  for (const auto& op : ops) {
    EXPECT_TRUE(names.insert(op.name).second) << op.name;
    EXPECT_FALSE(family_name(op.family).empty());
  }
  for (const char* name : {"$concat", "$strLenCP", "$trunc", "$switch", "$convert", "$dayOfMonth",
                           "$reduce", "$in", "$cmp", "$not", "$literal", "$let", "$toBool"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
}

}  // namespace
}  // namespace denormd::mapping
