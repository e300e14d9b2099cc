// $toHashedIndexKey as MongoDB 6.0 evaluates it (ExpressionToHashedIndexKey, expression.cpp):
// the hashed index key of its one operand, a NumberLong, missing hashed as null; in $expr and
// in $addFields. And the partition expression denormd routes change events by.

#include <cstdint>
#include <string>

#include "bson/hashed_key.h"
#include "expression_cases.h"
#include "pipeline.h"
#include "query_operators.h"

namespace mongo_emulator::engine::testing {
namespace {

namespace bson = denormd::bson;

std::string long_value(std::int64_t v) {
  return json(bson::document{{"v", bson::value(v)}});
}

// The key of a value given as Extended JSON, by the library denormd uses.
std::int64_t key_of(const char* json_value) {
  return bson::hashed_index_key(*doc(std::string(R"({"v": )") + json_value + "}").get("v"));
}

TEST(expression_hash, the_documented_example_is_a_long) {
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": "$val"})", R"({"val": "string to hash"})"),
            long_value(763543691661428748));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": "string to hash"})"), long_value(763543691661428748));
  EXPECT_EQ(eval(R"({"$type": {"$toHashedIndexKey": "$val"}})", R"({"val": 1})"), v(R"("long")"));
}

// hasher_test.cpp's known answers, through the operator: numbers of any type by their int64,
// null and missing alike (HashNull), a document by its fields (HashObject).
TEST(expression_hash, known_answers_and_missing_as_null) {
  for (const char* forty_two :
       {"42", "42.9", R"({"$numberLong": "42"})", R"({"$numberDecimal": "42.0"})"}) {
    const std::string input = std::string(R"({"x": )") + forty_two + "}";
    EXPECT_EQ(eval(R"({"$toHashedIndexKey": "$x"})", input.c_str()),
              long_value(-944302157085130861))
        << forty_two;
  }
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": null})"), long_value(2338878944348059895));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": "$missing"})"), long_value(2338878944348059895));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": "$$REMOVE"})"), long_value(2338878944348059895));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": {"a": "abc", "b": {"$numberLong": "123"}}})"),
            long_value(4771603801758380216));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": {"$literal": {}}})"), long_value(7980500913326740417));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": {"$concat": ["string ", "to hash"]}})"),
            long_value(763543691661428748));
}

// parseOperand, not an argument list: an array is hashed as the array it evaluates to, [x]
// included, and there is no arity error to give.
TEST(expression_hash, an_array_argument_is_one_array_value) {
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": ["bar", "baz", "qux"]})"),
            long_value(-2938911267422831539));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": []})"), long_value(8849948234993459283));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": ["$a"]})", R"({"a": 1})"), long_value(key_of("[1]")));
  EXPECT_NE(key_of("[1]"), key_of("1"));
  EXPECT_EQ(eval(R"({"$toHashedIndexKey": [1, "$missing"]})"), long_value(key_of("[1, null]")));
  expect_parse_error(R"({"$toHashedIndexKey": {"$nope": 1}})", 168);
}

TEST(expression_hash, in_add_fields_and_in_expr) {
  auto p = parse_pipeline(array(R"([{"$addFields": {"h": {"$toHashedIndexKey": "$k"}}}])"));
  ASSERT_TRUE(p) << p.error().message;
  auto out = run_pipeline(*p, documents(R"([{"k": "string to hash"}, {"k": 1}])"));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 2U);
  EXPECT_EQ(*(*out)[0].get("h"), bson::value(std::int64_t{763543691661428748}));
  EXPECT_EQ(*(*out)[1].get("h"), bson::value(std::int64_t{5902408780260971510}));

  auto m = compile_query(doc(
      R"({"$expr": {"$eq": [{"$toHashedIndexKey": "$k"}, {"$numberLong": "5902408780260971510"}]}})"));
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->matches(doc(R"({"k": 1.5})")));
  EXPECT_FALSE(m->matches(doc(R"({"k": 2})")));
}

// The partition of a key: {$abs: {$mod: [<hash>, N]}}. $mod first keeps the remainder inside
// (-N, N) (the dividend's sign), so $abs cannot overflow; $abs first fails on INT64_MIN.
constexpr const char* partition_of_h = R"({"$abs": {"$mod": ["$h", 4]}})";
constexpr const char* abs_first_of_h = R"({"$mod": [{"$abs": "$h"}, 4]})";

TEST(expression_hash, the_partition_expression_is_overflow_free) {
  const char* min = R"({"h": {"$numberLong": "-9223372036854775808"}})";
  EXPECT_EQ(eval(partition_of_h, min), long_value(0));
  EXPECT_EQ(run_error(abs_first_of_h, min).first, 28680);
  EXPECT_EQ(eval(partition_of_h, R"({"h": {"$numberLong": "-9223372036854775807"}})"),
            long_value(3));
  EXPECT_EQ(eval(partition_of_h, R"({"h": {"$numberLong": "9223372036854775807"}})"),
            long_value(3));
  EXPECT_EQ(eval(partition_of_h, R"({"h": {"$numberLong": "-6"}})"), long_value(2));
}

// What the server computes for a key is what bson::hashed_partition gives for its hash.
TEST(expression_hash, the_server_partition_agrees_with_the_library) {
  const auto e = expression::parse(bson::value(
      doc(R"({"e": {"$abs": {"$mod": [{"$toHashedIndexKey": "$k"}, 4]}}})").fields()[0].val));
  ASSERT_TRUE(e);
  int per_partition[4] = {};
  for (std::int32_t i = 0; i < 400; ++i) {
    for (const bson::value& k :
         {bson::value(i), bson::value("host-" + std::to_string(i)),
          bson::value(bson::document{{"a", i}, {"b", bson::value(i * 0.5)}})}) {
      const auto got = e->evaluate(bson::document{{"k", k}});
      ASSERT_TRUE(got && got->is<std::int64_t>());
      const std::int32_t expected = bson::hashed_partition(bson::hashed_index_key(k), 4);
      ASSERT_EQ(got->as<std::int64_t>(), expected) << bson::to_json(k);
      ++per_partition[expected];
    }
  }
  for (const int n : per_partition)
    EXPECT_GT(n, 200);  // 1,200 keys over 4 partitions
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
