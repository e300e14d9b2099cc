#include "projection.h"

#include "test_support.h"

namespace mongo_emulator::engine::testing {
namespace {

struct projection_case {
  const char* spec;
  const char* input;
  const char* output;
};

void expect_projection(const projection_case& c) {
  SCOPED_TRACE(c.spec);
  auto p = parse_projection(doc(c.spec));
  ASSERT_TRUE(p) << p.error().code << " " << p.error().message;
  EXPECT_EQ(json(apply(*p, doc(c.input))), json(doc(c.output))) << "input " << c.input;
}

void expect_projection_error(const char* spec, int code, const char* message) {
  SCOPED_TRACE(spec);
  auto p = parse_projection(doc(spec));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, code) << p.error().message;
  if (message != nullptr) {
    EXPECT_EQ(p.error().message, message);
  }
}

TEST(projection, inclusion_exclusion_and_id) {
  const projection_case cases[] = {
      {R"({})", R"({"_id": 1, "a": 1})", R"({"_id": 1, "a": 1})"},
      {R"({"a": 1})", R"({"_id": 1, "a": 1, "b": 2})", R"({"_id": 1, "a": 1})"},
      {R"({"b": 1, "a": true})", R"({"_id": 1, "a": 1, "b": 2, "c": 3})",
       R"({"_id": 1, "a": 1, "b": 2})"},
      {R"({"a": 1, "_id": 0})", R"({"_id": 1, "a": 1, "b": 2})", R"({"a": 1})"},
      {R"({"_id": 1})", R"({"_id": 1, "a": 1})", R"({"_id": 1})"},
      {R"({"_id": 0})", R"({"_id": 1, "a": 1})", R"({"a": 1})"},
      {R"({"b": 0})", R"({"_id": 1, "a": 1, "b": 2})", R"({"_id": 1, "a": 1})"},
      {R"({"b": false, "_id": 0})", R"({"_id": 1, "a": 1, "b": 2})", R"({"a": 1})"},
      {R"({"b": 0, "_id": 1})", R"({"_id": 1, "a": 1, "b": 2})", R"({"_id": 1, "a": 1})"},
      {R"({"a": 1})", R"({"b": 1})", R"({})"},
      {R"({"a": 2.5})", R"({"_id": 1, "a": 1})", R"({"_id": 1, "a": 1})"},
  };
  for (const auto& c : cases)
    expect_projection(c);
  expect_projection_error(R"({"a": 1, "b": 0})", 31254,
                          "Cannot do exclusion on field b in inclusion projection");
  expect_projection_error(R"({"a": 0, "b": 1})", 31253,
                          "Cannot do inclusion on field b in exclusion projection");
  expect_projection_error(R"({"a": 0, "b": "x"})", 31252,
                          "Cannot use expression other than $meta in exclusion projection");
  expect_projection_error(R"({"a": "x", "b": 0})", 31254,
                          "Cannot do exclusion on field b in inclusion projection");
}

TEST(projection, dotted_and_nested_paths) {
  const projection_case cases[] = {
      {R"({"a.b": 1})", R"({"_id": 1, "a": {"b": 1, "c": 2}, "d": 1})",
       R"({"_id": 1, "a": {"b": 1}})"},
      {R"({"a": {"b": 1}})", R"({"_id": 1, "a": {"b": 1, "c": 2}, "d": 1})",
       R"({"_id": 1, "a": {"b": 1}})"},
      {R"({"a.b": 1, "_id": 0})", R"({"a": [{"b": 1, "c": 1}, 2, {"c": 3}, [{"b": 4}]]})",
       R"({"a": [{"b": 1}, {}, [{"b": 4}]]})"},
      {R"({"a.b": 1, "_id": 0})", R"({"a": 5})", R"({})"},
      {R"({"a.b": 1, "_id": 0})", R"({"a": {"c": 1}})", R"({"a": {}})"},
      {R"({"a.b": 0})", R"({"_id": 1, "a": [{"b": 1, "c": 1}, 2], "d": {"b": 1}})",
       R"({"_id": 1, "a": [{"c": 1}, 2], "d": {"b": 1}})"},
      {R"({"a.b.c": 0})", R"({"a": {"b": {"c": 1, "d": 2}}})", R"({"a": {"b": {"d": 2}}})"},
      {R"({"_id.x": 1, "a": 1})", R"({"_id": {"x": 1, "y": 2}, "a": 1, "b": 2})",
       R"({"_id": {"x": 1}, "a": 1})"},
  };
  for (const auto& c : cases)
    expect_projection(c);
  expect_projection_error(R"({"a": 1, "a.b": 1})", 31249,
                          "Path collision at a.b remaining portion b");
  expect_projection_error(R"({"a.b": 1, "a": 1})", 31250, "Path collision at a");
  expect_projection_error(R"({"a..b": 1})", 15998,
                          "FieldPath field names may not be empty strings.");
  expect_projection_error(R"({"$a": 1})", 16410, nullptr);
  expect_projection_error(R"({"a": {}})", 51270, nullptr);
  expect_projection_error(R"({"a.$": 1})", 2, nullptr);
}

TEST(projection, computed_fields) {
  const projection_case cases[] = {
      {R"({"a": "x"})", R"({"_id": 1, "a": 1})", R"({"_id": 1, "a": "x"})"},
      {R"({"x": "$a.b"})", R"({"_id": 1, "a": {"b": 5}})", R"({"_id": 1, "x": 5})"},
      {R"({"x": "$a.b"})", R"({"_id": 1, "a": [{"b": 5}, {"c": 1}, 3, {"b": 6}]})",
       R"({"_id": 1, "x": [5, 6]})"},
      {R"({"x": "$missing"})", R"({"_id": 1})", R"({"_id": 1})"},
      {R"({"_id": 0, "b": 1, "a": "$x"})", R"({"a": 1, "b": 2, "x": 3})", R"({"b": 2, "a": 3})"},
      {R"({"a.c": "lit", "_id": 0})", R"({"a": {"b": 1}})", R"({"a": {"c": "lit"}})"},
      {R"({"a.c": "lit", "_id": 0})", R"({"z": 1})", R"({"a": {"c": "lit"}})"},
      {R"({"o": {"k": "$a", "n": [1, "$a"]}, "_id": 0})", R"({"a": 2})",
       R"({"o": {"k": 2, "n": [1, 2]}})"},
      {R"({"l": {"$literal": "$a"}, "_id": 0})", R"({"a": 2})", R"({"l": "$a"})"},
      {R"({"n": null, "_id": 0})", R"({"a": 2})", R"({"n": null})"},
  };
  for (const auto& c : cases)
    expect_projection(c);
  expect_projection_error(R"({"a": {"$sqrt": 4}})", 168, "Unrecognized expression '$sqrt'");
  expect_projection_error(R"({"a": "$$NOPE"})", 17276, "Use of undefined variable: NOPE");
}

TEST(projection, find_slice_and_elem_match) {
  const projection_case cases[] = {
      {R"({"a": {"$slice": 2}})", R"({"_id": 1, "a": [1, 2, 3], "b": 1})",
       R"({"_id": 1, "a": [1, 2], "b": 1})"},
      {R"({"a": {"$slice": -1}})", R"({"_id": 1, "a": [1, 2, 3]})", R"({"_id": 1, "a": [3]})"},
      {R"({"a": {"$slice": [1, 1]}})", R"({"a": [1, 2, 3]})", R"({"a": [2]})"},
      {R"({"a": {"$slice": [-2, 5]}})", R"({"a": [1, 2, 3]})", R"({"a": [2, 3]})"},
      {R"({"a": {"$slice": 2}})", R"({"a": "x"})", R"({"a": "x"})"},
      {R"({"a": {"$slice": 1}, "b": 1})", R"({"_id": 1, "a": [1, 2], "b": 1, "c": 1})",
       R"({"_id": 1, "a": [1], "b": 1})"},
      {R"({"a": {"$elemMatch": {"x": {"$gt": 1}}}})",
       R"({"_id": 1, "a": [{"x": 1}, {"x": 2}, {"x": 3}], "b": 1})",
       R"({"_id": 1, "a": [{"x": 2}]})"},
      {R"({"a": {"$elemMatch": {"x": 9}}})", R"({"_id": 1, "a": [{"x": 1}]})", R"({"_id": 1})"},
  };
  for (const auto& c : cases)
    expect_projection(c);
  expect_projection_error(R"({"a": {"$slice": [1]}})", 31272,
                          "$slice array argument should be of form [skip, limit]");
  expect_projection_error(R"({"a": {"$slice": [1, 0]}})", 31259,
                          "$slice limit must be positive, got 0");
  expect_projection_error(R"({"a": {"$slice": "x"}})", 31273,
                          "$slice only supports numbers and [skip, limit] arrays");
  expect_projection_error(R"({"a.b": {"$elemMatch": {"x": 1}}})", 31275,
                          "Cannot use $elemMatch projection on a nested field.");
  // In an aggregation, {$slice: ...} is an (unsupported) expression, not find's operator.
  EXPECT_FALSE(projection::parse(doc(R"({"a": {"$slice": 2}})"), projection::flavour::aggregate));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
