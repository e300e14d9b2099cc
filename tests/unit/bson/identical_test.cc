#include "bson/identical.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bson/json.h"

namespace denormd::bson {
namespace {

value j(const char* json) {
  auto doc = parse_json(std::string("{\"v\":") + json + "}");
  EXPECT_TRUE(doc.has_value()) << json;
  return *doc->get("v");
}

TEST(identical_test, a_nan_is_identical_to_a_nan_at_any_depth) {
  EXPECT_TRUE(identical(value(std::nan("")), value(std::nan(""))));
  EXPECT_TRUE(identical(j(R"({"a":[1,{"b":{"$numberDouble":"NaN"}}]})"),
                        j(R"({"a":[1,{"b":{"$numberDouble":"NaN"}}]})")));
  EXPECT_TRUE(identical(j(R"({"$numberDecimal":"NaN"})"), j(R"({"$numberDecimal":"NaN"})")));
  EXPECT_FALSE(identical(value(std::nan("")), value(1.0)));
  EXPECT_FALSE(identical(value(1.0), value(std::nan(""))));
  EXPECT_FALSE(identical(value(std::nan("")), j(R"({"$numberDecimal":"NaN"})")));
}

TEST(identical_test, types_field_order_and_zero_signs_count) {
  EXPECT_TRUE(identical(j(R"({"a":1,"b":"x"})"), j(R"({"a":1,"b":"x"})")));
  EXPECT_FALSE(identical(value(1), value(1.0)));
  EXPECT_FALSE(identical(value(1), value(std::int64_t{1})));
  EXPECT_FALSE(identical(j(R"({"a":[1]})"), j(R"({"a":[1.0]})")));
  EXPECT_FALSE(identical(j(R"({"a":1,"b":2})"), j(R"({"b":2,"a":1})")));
  EXPECT_FALSE(identical(j(R"([1,2])"), j(R"([1,2,3])")));
  EXPECT_FALSE(identical(value(0.0), value(-0.0)));
  EXPECT_TRUE(identical(value(-0.0), value(-0.0)));
}

}  // namespace
}  // namespace denormd::bson
