#include "bson/value_hash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bson/json.h"

namespace denormd::bson {
namespace {

value dec(const char* text) {
  return *parse_json(std::string(R"({"v":{"$numberDecimal":")") + text + "\"}}")->get("v");
}

TEST(value_hash_test, numbers_that_compare_equal_hash_alike) {
  const std::vector<std::vector<value>> groups = {
      {value(1), value(std::int64_t{1}), value(1.0), dec("1.00"), dec("1E0")},
      {value(0.5), dec("0.50")},
      {value(0), value(-0.0), dec("-0"), dec("0E-6176")},
      {value(std::int64_t{9007199254740993}), dec("9007199254740993")},
      {value(std::nan("")), dec("NaN")},
      {value(HUGE_VAL), dec("Infinity")},
  };
  for (const auto& group : groups) {
    for (const auto& a : group) {
      for (const auto& b : group) {
        EXPECT_TRUE(value_equal{}(a, b));
        EXPECT_EQ(value_hash{}(a), value_hash{}(b));
      }
    }
  }
  // Equal as doubles, not as values: different keys.
  EXPECT_FALSE(value_equal{}(dec("4.00000000000000000001"), value(4)));
  EXPECT_FALSE(value_equal{}(dec("0.1"), value(0.1)));
}

TEST(value_hash_test, strings_documents_and_arrays_hash_by_content_as_they_compare) {
  const value_hash hash;
  EXPECT_EQ(hash("a"), hash(symbol{"a"}));
  EXPECT_EQ(hash(document{{"a", 1}}), hash(document{{"a", 1.0}}));
  EXPECT_EQ(hash(array{1, "x"}), hash(array{1.0, "x"}));
  EXPECT_NE(hash(1), hash("1"));
  EXPECT_NE(hash(document{{"a", 1}}), hash(document{{"b", 1}}));
  EXPECT_NE(hash(document{{"a", 1}, {"b", 2}}), hash(document{{"b", 2}, {"a", 1}}));
}

}  // namespace
}  // namespace denormd::bson
