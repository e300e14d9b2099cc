#include "bson/identical.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bson/json.h"

namespace denormd::bson {
namespace {

// Whether two documents, as Extended JSON, are identical.
bool same(const char* a, const char* b) {
  const auto x = parse_json(a);
  const auto y = parse_json(b);
  EXPECT_TRUE(x && y) << a << " " << b;
  return x && y && identical(*x, *y);
}

TEST(identical_test, a_nan_is_identical_to_a_nan_at_any_depth) {
  EXPECT_TRUE(identical(value(std::nan("")), value(std::nan(""))));
  EXPECT_TRUE(same(R"({"a":[1,{"b":{"$numberDouble":"NaN"}}]})",
                   R"({"a":[1,{"b":{"$numberDouble":"NaN"}}]})"));
  EXPECT_TRUE(same(R"({"a":{"$numberDecimal":"NaN"}})", R"({"a":{"$numberDecimal":"NaN"}})"));
  EXPECT_FALSE(identical(value(std::nan("")), value(1.0)));
  EXPECT_FALSE(identical(value(1.0), value(std::nan(""))));
  EXPECT_FALSE(same(R"({"a":{"$numberDouble":"NaN"}})", R"({"a":{"$numberDecimal":"NaN"}})"));
}

TEST(identical_test, types_field_order_and_zero_signs_count) {
  EXPECT_TRUE(same(R"({"a":1,"b":"x"})", R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(identical(value(1), value(1.0)));
  EXPECT_FALSE(identical(value(1), value(std::int64_t{1})));
  EXPECT_FALSE(same(R"({"a":[1]})", R"({"a":[1.0]})"));
  EXPECT_FALSE(same(R"({"a":1,"b":2})", R"({"b":2,"a":1})"));
  EXPECT_FALSE(same(R"({"a":[1,2]})", R"({"a":[1,2,3]})"));
  EXPECT_FALSE(identical(value(0.0), value(-0.0)));
  EXPECT_TRUE(identical(value(-0.0), value(-0.0)));
}

}  // namespace
}  // namespace denormd::bson
