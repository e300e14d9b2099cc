// The emulator's hash for unordered containers of values: equal as MongoDB compares them
// (value_equal), equal hashes, whatever the number types.

#include "value_hash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bson/json.h"

namespace mongo_emulator {
namespace {

namespace bson = denormd::bson;

bson::value dec(const char* text) {
  return *bson::parse_json(std::string(R"({"v":{"$numberDecimal":")") + text + "\"}}")->get("v");
}

TEST(value_hash_test, numbers_that_compare_equal_hash_alike) {
  const std::vector<std::vector<bson::value>> groups = {
      {bson::value(1), bson::value(std::int64_t{1}), bson::value(1.0), dec("1.00"), dec("1E0")},
      {bson::value(0.5), dec("0.50")},
      {bson::value(0), bson::value(-0.0), dec("-0"), dec("0E-6176")},
      {bson::value(std::int64_t{9007199254740993}), dec("9007199254740993")},
      {bson::value(std::nan("")), dec("NaN")},
      {bson::value(HUGE_VAL), dec("Infinity")},
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
  EXPECT_FALSE(value_equal{}(dec("4.00000000000000000001"), bson::value(4)));
  EXPECT_FALSE(value_equal{}(dec("0.1"), bson::value(0.1)));
}

}  // namespace
}  // namespace mongo_emulator
