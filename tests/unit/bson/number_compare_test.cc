#include "bson/number_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bson/json.h"

namespace denormd::bson {
namespace {

value dec(const char* text) {
  auto doc = parse_json(std::string(R"({"v":{"$numberDecimal":")") + text + "\"}}");
  EXPECT_TRUE(doc.has_value()) << text;
  return *doc->get("v");
}

std::string show(const value& v) {
  return to_json(document{{"v", v}});
}

// Groups of equal numbers in ascending order, every BSON number type mixed in: MongoDB orders
// numbers by exact value, NaN lowest (docs/architecture.md).
std::vector<std::vector<value>> ascending_groups() {
  using limits = std::numeric_limits<double>;
  constexpr std::int64_t two_53 = std::int64_t{1} << 53;
  constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
  return {
      {value(limits::quiet_NaN()), value(-limits::quiet_NaN()), dec("NaN")},
      {value(-limits::infinity()), dec("-Infinity")},
      {dec("-9.999999999999999999999999999999999E+6144")},
      {dec("-1E+6111")},
      {value(-limits::max())},
      {value(-1e308)},
      {dec("-1E+308")},
      {value(int64_min), value(-9223372036854775808.0), dec("-9223372036854775808")},
      {value(int64_min + 1), dec("-9223372036854775807")},
      {dec("-4.00000000000000000001")},
      {value(-4), value(std::int64_t{-4}), value(-4.0), dec("-4.00")},
      {dec("-3.999999999999999999999999999999999")},
      {value(-limits::denorm_min())},
      {dec("-1E-6176")},
      {value(0), value(std::int64_t{0}), value(0.0), value(-0.0), dec("0"), dec("-0"),
       dec("0E-6176"), dec("-0E+6111"), dec("0.000")},
      {dec("1E-6176")},
      {dec("4.940656458412465441765687928682213E-324")},  // below 2^-1074 = 4.94065...2137...
      {value(limits::denorm_min())},
      {dec("4.940656458412465441765687928682214E-324")},
      {dec("0.1")},
      {dec("0.1000000000000000055511151231257827")},
      {value(0.1)},
      {dec("0.1000000000000000055511151231257828")},
      {value(0.5), dec("0.5"), dec("0.50000"), dec("5E-1")},
      {value(1), value(std::int64_t{1}), value(1.0), dec("1"), dec("1.0"), dec("1.00"),
       dec("1000E-3"), dec("0.01E+2")},
      {dec("1.000000000000000000000000000000001")},
      {value(4), value(std::int64_t{4}), value(4.0), dec("4"), dec("4.000")},
      {dec("4.00000000000000000001")},
      {value(two_53), value(9007199254740992.0), dec("9007199254740992")},
      {value(two_53 + 1), dec("9007199254740993"), dec("9.007199254740993E+15")},
      {value(two_53 + 2), value(9007199254740994.0), dec("9007199254740994.0")},
      {value(int64_max - 1), dec("9223372036854775806")},
      {value(int64_max), dec("9223372036854775807")},
      {value(9223372036854775808.0), dec("9223372036854775808")},
      {dec("1E+308")},
      {value(1e308)},
      {dec("1.797693134862315708145274237317043E+308")},  // around 1.79769...70435679...E+308
      {value(limits::max())},
      {dec("1.797693134862315708145274237317044E+308")},
      {dec("1E+6111")},
      {dec("9.999999999999999999999999999999999E+6144")},
      {value(limits::infinity()), dec("Infinity")},
  };
}

TEST(number_compare_test, every_pair_of_number_types_compares_by_exact_value) {
  const auto groups = ascending_groups();
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    for (std::size_t gj = 0; gj < groups.size(); ++gj) {
      const int expected = gi < gj ? -1 : (gi > gj ? 1 : 0);
      for (const auto& a : groups[gi]) {
        for (const auto& b : groups[gj]) {
          EXPECT_EQ(compare_numbers(a, b), expected) << show(a) << " vs " << show(b);
          EXPECT_EQ(compare(a, b), expected) << show(a) << " vs " << show(b);
        }
      }
    }
  }
}

TEST(number_compare_test, decimal_past_double_precision_is_not_its_double) {
  // The two cases the soak test found: equal as doubles, different as MongoDB compares.
  EXPECT_GT(compare(dec("4.00000000000000000001"), value(4)), 0);
  EXPECT_LT(compare(value(std::int64_t{4}), dec("4.00000000000000000001")), 0);
  EXPECT_NE(compare(dec("0.1"), value(0.1)), 0);
  EXPECT_EQ(compare(document{{"s", 4}}, document{{"s", dec("4.00")}}), 0);
  EXPECT_LT(compare(document{{"s", 4}}, document{{"s", dec("4.00000000000000000001")}}), 0);
}

}  // namespace
}  // namespace denormd::bson
