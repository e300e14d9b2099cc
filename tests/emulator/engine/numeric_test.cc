// decimal128 arithmetic ($inc, $mul) and the sums of $group's $sum and $avg, with the result
// types MongoDB documents: "$sum ... the result type is the widest of its inputs" and SafeNum's
// conversion of a double operand to a 15-digit decimal.
#include "numeric.h"
#include "pipeline.h"
#include "update_cases.h"

namespace mongo_emulator::engine::testing {
namespace {

TEST(update_decimal, inc_and_mul_compute_in_decimal128) {
  const update_case cases[] = {
      {.name = "int32 plus decimal is decimal",
       .before = R"({"_id": 1, "a": 1})",
       .update = R"({"$inc": {"a": {"$numberDecimal": "1.1"}}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "2.1"}})",
       .description = R"({"updatedFields": {"a": {"$numberDecimal": "2.1"}}})"},
      {.name = "decimal plus double: the double counts with 15 digits",
       .before = R"({"_id": 1, "a": {"$numberDecimal": "1"}})",
       .update = R"({"$inc": {"a": 0.1}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "1.100000000000000"}})"},
      {.name = "decimal plus int64",
       .before = R"({"_id": 1, "a": {"$numberDecimal": "0.5"}})",
       .update = R"({"$inc": {"a": {"$numberLong": "9007199254740993"}}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "9007199254740993.5"}})"},
      {.name = "missing field takes the decimal",
       .before = R"({"_id": 1})",
       .update = R"({"$inc": {"a": {"$numberDecimal": "-2.50"}}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "-2.50"}})"},
      {.name = "mul decimal by int32",
       .before = R"({"_id": 1, "a": {"$numberDecimal": "2.5"}})",
       .update = R"({"$mul": {"a": 4}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "10.0"}})"},
      {.name = "mul int32 by decimal",
       .before = R"({"_id": 1, "a": 3})",
       .update = R"({"$mul": {"a": {"$numberDecimal": "0.25"}}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "0.75"}})"},
      {.name = "adding a decimal zero to the same decimal is a no-op",
       .before = R"({"_id": 1, "a": {"$numberDecimal": "1.0"}})",
       .update = R"({"$inc": {"a": 0}})",
       .after = R"({"_id": 1, "a": {"$numberDecimal": "1.0"}})",
       .description = nullptr},
  };
  for (const auto& c : cases)
    run_case(c);
}

TEST(numeric, decimal_conversion_of_doubles) {
  EXPECT_EQ(to_decimal128(denormd::bson::value(0.1)).to_string(), "0.100000000000000");
  EXPECT_EQ(to_decimal128(denormd::bson::value(1000.55)).to_string(), "1000.55000000000");
  EXPECT_EQ(to_decimal128(denormd::bson::value(3.5), 34).to_string(), "3.5");
  EXPECT_EQ(to_decimal128(denormd::bson::value(0.1), 34).to_string(),
            "0.1000000000000000055511151231257827");
  EXPECT_EQ(to_decimal128(denormd::bson::value(std::int64_t{-42})).to_string(), "-42");
}

std::string group_sum(const char* values, const char* op = "$sum") {
  auto p = parse_pipeline(
      array(std::string(R"([{"$group": {"_id": null, "r": {")") + op + R"(": "$v"}}}])"));
  EXPECT_TRUE(p);
  std::vector<denormd::bson::document> docs;
  for (const auto& v : array(values))
    docs.push_back(denormd::bson::document{{"v", v}});
  auto out = run_pipeline(*p, docs);
  EXPECT_TRUE(out && out->size() == 1);
  if (!out || out->empty()) return {};
  return json(denormd::bson::document{{"r", *out->front().get("r")}});
}

TEST(group_sum, result_type_is_the_widest_input) {
  EXPECT_EQ(group_sum("[1, 2, 3]"), json(doc(R"({"r": 6})")));
  EXPECT_EQ(group_sum("[2147483647, 1]"), json(doc(R"({"r": {"$numberLong": "2147483648"}})")));
  EXPECT_EQ(group_sum(R"([1, {"$numberLong": "2"}])"), json(doc(R"({"r": {"$numberLong": "3"}})")));
  EXPECT_EQ(group_sum("[1, 2.5]"), json(doc(R"({"r": 3.5})")));
  EXPECT_EQ(group_sum(R"([1, 2.5, {"$numberDecimal": "0.1"}])"),
            json(doc(R"({"r": {"$numberDecimal": "3.6"}})")));
  EXPECT_EQ(group_sum(R"(["x", null, true])"), json(doc(R"({"r": 0})")));
}

TEST(group_sum, integers_sum_exactly_through_an_int64_overflow) {
  // The running total leaves int64 and comes back: MongoDB's compensated sum keeps it exact.
  EXPECT_EQ(group_sum(R"([{"$numberLong": "9223372036854775807"}, 1, -1])"),
            json(doc(R"({"r": {"$numberLong": "9223372036854775807"}})")));
  // A total outside int64 is a double.
  EXPECT_EQ(
      group_sum(
          R"([{"$numberLong": "9223372036854775807"}, {"$numberLong": "9223372036854775807"}])"),
      json(doc(R"({"r": 1.8446744073709552e19})")));
}

TEST(group_sum, doubles_are_summed_with_compensation) {
  // Naive left-to-right addition gives 0 here (1e100 swallows 1.0); the compensated sum keeps it.
  EXPECT_EQ(group_sum("[1e100, 1.0, -1e100]"), json(doc(R"({"r": 1.0})")));
}

TEST(group_avg, double_or_decimal) {
  EXPECT_EQ(group_sum("[1, 2]", "$avg"), json(doc(R"({"r": 1.5})")));
  EXPECT_EQ(group_sum(R"([1, {"$numberDecimal": "2"}])", "$avg"),
            json(doc(R"({"r": {"$numberDecimal": "1.5"}})")));
  EXPECT_EQ(group_sum(R"(["x"])", "$avg"), json(doc(R"({"r": null})")));
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
