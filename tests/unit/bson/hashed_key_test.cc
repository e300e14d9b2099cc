#include "bson/hashed_key.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bson/json.h"
#include "common/md5.h"

namespace denormd::bson {
namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr double two_to_63 = 9223372036854775808.0;

// The value of {"v": <json>} in Extended JSON.
value json_value(const std::string& json) {
  auto d = parse_json(R"({"v": )" + json + "}");
  EXPECT_TRUE(d) << json;
  return d ? *d->get("v") : value();
}

value dec(const char* text) {
  return json_value(std::string(R"({"$numberDecimal": ")") + text + "\"}");
}

value i64(std::int64_t v) {
  return value(v);
}

// MD5 over hand-written key bytes, for the layouts no MongoDB test pins.
std::int64_t md5_key(const std::string& bytes) {
  const md5::digest d = md5::of(std::string(4, '\0') + bytes);  // seed 0
  std::uint64_t out = 0;
  for (int i = 7; i >= 0; --i)
    out = (out << 8) | d[static_cast<std::size_t>(i)];
  return static_cast<std::int64_t>(out);
}

// MongoDB's documentation of $toHashedIndexKey.
TEST(hashed_key_test, the_documented_example) {
  EXPECT_EQ(hashed_index_key(value("string to hash")), 763543691661428748);
}

// src/mongo/db/hasher_test.cpp, HashIntOrLongOrDouble: int32, int64 and double of one whole
// part share a key; NaN is 0; doubles beyond the int64 range are clamped.
TEST(hashed_key_test, numbers_of_every_type_hash_by_their_int64) {
  const std::vector<std::pair<std::vector<value>, std::int64_t>> cases = {
      {{value(42), value(42.123), i64(42)}, -944302157085130861},
      {{value(0), value(0.456), i64(0), value(std::nan("")), value(-0.0),
        value(std::numeric_limits<double>::signaling_NaN())},
       4854801880128277513},
      {{value(1), value(1.987), i64(1)}, 5902408780260971510},
      {{value(-1), value(-1.789), i64(-1)}, 1140205862565771219},
      {{value(std::numeric_limits<std::int32_t>::min()), value(-2147483648.0), i64(-2147483648)},
       6165898260261354870},
      {{value(std::numeric_limits<std::int32_t>::max()), value(2147483647.0), i64(2147483647)},
       1143184177162245883},
      {{value(std::numeric_limits<double>::max()), i64(int64_max)}, 921523596458303250},
      {{value(-std::numeric_limits<double>::max()), i64(int64_min)}, 4532067210535695462},
  };
  for (const auto& [values, key] : cases) {
    for (const auto& v : values)
      EXPECT_EQ(hashed_index_key(v), key) << to_json(v, json_mode::canonical);
  }
  EXPECT_NE(hashed_index_key(value(3)), hashed_index_key(value(4)));
}

// bsonelement_test.cpp, SafeNumberLongPositiveBound/NegativeBound: 2^63 keeps the wrap to
// INT64_MIN of older servers; the doubles around it and the infinities clamp.
TEST(hashed_key_test, doubles_at_the_int64_bounds) {
  EXPECT_EQ(number_for_hash(value(two_to_63)), int64_min);
  EXPECT_EQ(hashed_index_key(value(two_to_63)), hashed_index_key(i64(int64_min)));
  EXPECT_EQ(number_for_hash(value(std::nextafter(two_to_63, 0.0))), 0x7ffffffffffffc00);
  EXPECT_EQ(number_for_hash(value(std::nextafter(two_to_63, HUGE_VAL))), int64_max);
  EXPECT_EQ(number_for_hash(value(HUGE_VAL)), int64_max);
  EXPECT_EQ(number_for_hash(value(-two_to_63)), int64_min);
  EXPECT_EQ(number_for_hash(value(std::nextafter(-two_to_63, 0.0))), -0x7ffffffffffffc00);
  EXPECT_EQ(number_for_hash(value(std::nextafter(-two_to_63, -HUGE_VAL))), int64_min);
  EXPECT_EQ(number_for_hash(value(-HUGE_VAL)), int64_min);
  EXPECT_EQ(number_for_hash(value(-2.9)), -2);  // toward zero
  // hasher_test VeryLargeAndSmallDoubles.
  EXPECT_NE(hashed_index_key(i64(int64_max)), hashed_index_key(value(int64_max / 2.0)));
  EXPECT_EQ(hashed_index_key(i64(int64_max)), hashed_index_key(value(1e38)));
  EXPECT_EQ(hashed_index_key(i64(int64_min)), hashed_index_key(value(-1e38)));
}

// Decimal128 goes through safeNumberLong too: NaN 0, clamped beyond int64, and otherwise
// Decimal128::toLong, which rounds half to even (where doubles truncate: 2.7 and
// Decimal128("2.7") hash differently).
TEST(hashed_key_test, decimals_round_half_to_even_and_clamp) {
  EXPECT_EQ(hashed_index_key(dec("42")), -944302157085130861);
  EXPECT_EQ(hashed_index_key(dec("42.00")), -944302157085130861);
  EXPECT_EQ(hashed_index_key(dec("NaN")), 4854801880128277513);
  EXPECT_EQ(hashed_index_key(dec("-0")), 4854801880128277513);
  EXPECT_EQ(hashed_index_key(dec("Infinity")), 921523596458303250);
  EXPECT_EQ(hashed_index_key(dec("-Infinity")), 4532067210535695462);
  const std::vector<std::pair<const char*, std::int64_t>> cases = {
      {"2.5", 2},
      {"3.5", 4},
      {"-2.5", -2},
      {"2.7", 3},
      {"2.49999999999999999999999999999999", 2},
      {"0.5", 0},
      {"1.5", 2},
      {"123E+2", 12300},
      {"1E-50", 0},
      {"9999999999999999999999999999999999E-30", 10000},
      {"9223372036854775806.5", 9223372036854775806},
      {"9223372036854775807", int64_max},
      {"9223372036854775807.5", int64_max},
      {"1E+30", int64_max},
      {"9.999999999999999999999999999999999E+6144", int64_max},
      {"-9223372036854775807.5", int64_min},
      {"-9223372036854775808", int64_min},
      {"-9223372036854775808.5", int64_min},
      {"-1E+19", int64_min},
  };
  for (const auto& [text, expected] : cases)
    EXPECT_EQ(number_for_hash(dec(text)), expected) << text;
  EXPECT_EQ(number_for_hash(value(2.7)), 2);
  EXPECT_NE(hashed_index_key(dec("2.7")), hashed_index_key(value(2.7)));
}

// hasher_test.cpp: HashMinKey ... HashCode.
TEST(hashed_key_test, mongodbs_known_answers_for_each_type) {
  EXPECT_EQ(hashed_index_key(value(min_key{})), 7961148599568647290);
  EXPECT_EQ(hashed_index_key(value(max_key{})), 5504842513779440750);
  EXPECT_EQ(hashed_index_key(value(undefined_t{})), 40158834000849533);
  EXPECT_EQ(hashed_index_key(value(null_t{})), 2338878944348059895);
  EXPECT_EQ(hashed_index_key(value("abc")), 8478485326885698097);
  EXPECT_EQ(hashed_index_key(value(symbol{"abc"})), 8478485326885698097);
  EXPECT_EQ(hashed_index_key(value("")), 2049396243249673340);
  EXPECT_EQ(hashed_index_key(value(symbol{""})), 2049396243249673340);
  EXPECT_EQ(hashed_index_key(json_value(R"({"a": "abc", "b": {"$numberLong": "123"}})")),
            4771603801758380216);
  EXPECT_EQ(hashed_index_key(value(document{})), 7980500913326740417);
  EXPECT_EQ(hashed_index_key(json_value(R"(["bar", "baz", "qux"])")), -2938911267422831539);
  EXPECT_EQ(hashed_index_key(value(array{})), 8849948234993459283);
  const std::vector<std::uint8_t> bytes{0, 1, 2, 3, 4, 6};
  EXPECT_EQ(hashed_index_key(value(binary{0, bytes})), 7252465090394235301);
  EXPECT_EQ(hashed_index_key(value(binary{128, bytes})), 5736670452907618262);
  std::vector<std::uint8_t> uuid;
  for (std::uint8_t i = 0; i < 16; ++i)
    uuid.push_back(i);
  EXPECT_EQ(hashed_index_key(value(binary{4, uuid})), 6084661258071355978);
  EXPECT_EQ(hashed_index_key(json_value(R"({"$oid": "010203040506070809101112"})")),
            -5588663249627035708);
  EXPECT_EQ(hashed_index_key(value(oid{})), -4293118519463489418);
  EXPECT_EQ(hashed_index_key(value(true)), 6405873908747105701);
  EXPECT_EQ(hashed_index_key(value(false)), 6289544573401934092);
  EXPECT_EQ(hashed_index_key(value(date_time{0x5566778811223344})), 4476222765095560467);
  EXPECT_EQ(hashed_index_key(value(date_time{0})), -1178696894582842035);
  EXPECT_EQ(hashed_index_key(value(regex{"mongodb", ""})), -7275792090268217043);
  EXPECT_EQ(hashed_index_key(value(regex{".*", "i"})), 7095855029187981886);
  EXPECT_EQ(hashed_index_key(value(code{"func f() { return 1; }"})), 6861638109178014270);
}

// The layouts no MongoDB known answer pins: a timestamp is its BSON uint64 (increment low)
// under rank 47, so it no longer hashes as the date of the same bytes (hasher_test of 2013
// expected equality, from when both ranked 45); binary subtype 2 keeps its inner length.
TEST(hashed_key_test, timestamps_and_old_binary_hash_their_bson_bytes) {
  const std::string ts_bytes("\x2f\0\0\0\x44\x33\x22\x11\x88\x77\x66\x55", 12);
  EXPECT_EQ(hashed_index_key(value(timestamp{0x55667788, 0x11223344})), md5_key(ts_bytes));
  EXPECT_NE(hashed_index_key(value(timestamp{0x55667788, 0x11223344})), 4476222765095560467);
  const std::string old_binary("\x1e\0\0\0\x06\0\0\0\x02\x02\0\0\0\xab\xcd", 15);
  EXPECT_EQ(hashed_index_key(value(binary{2, {0xab, 0xcd}})), md5_key(old_binary));
}

// hasher_test.cpp: RecursiveSquashingIntsAndDoubles and the tests of keys that must differ.
TEST(hashed_key_test, documents_and_arrays_hash_recursively_with_field_names) {
  EXPECT_EQ(hashed_index_key(json_value(R"({"x": {"a": 3, "b": [3.1, {"c": 3}]}})")),
            hashed_index_key(json_value(R"({"x": {"a": 3.1, "b": [3, {"c": 3.0}]}})")));
  EXPECT_NE(hashed_index_key(json_value(R"({"0": 0, "1": 1})")),
            hashed_index_key(json_value("[0, 1]")));
  EXPECT_NE(hashed_index_key(json_value(R"({"a": {}, "b": 1})")),
            hashed_index_key(json_value(R"({"a": {"b": 1}})")));
  EXPECT_NE(hashed_index_key(json_value(R"({"a": 1, "b": 2})")),
            hashed_index_key(json_value(R"({"b": 2, "a": 1})")));
  EXPECT_NE(hashed_index_key(value(3)), hashed_index_key(value("3")));
  EXPECT_NE(hashed_index_key(value("3")), hashed_index_key(value(regex{"3", ""})));
  EXPECT_NE(hashed_index_key(value(min_key{})), hashed_index_key(value(max_key{})));
  EXPECT_NE(hashed_index_key(value(code{"abc"})), hashed_index_key(value("abc")));
}

TEST(hashed_key_test, partitions_are_the_remainders_magnitude) {
  EXPECT_EQ(hashed_partition(0, 4), 0);
  EXPECT_EQ(hashed_partition(7, 4), 3);
  EXPECT_EQ(hashed_partition(-7, 4), 3);
  EXPECT_EQ(hashed_partition(-8, 4), 0);
  EXPECT_EQ(hashed_partition(int64_min, 4), 0);
  EXPECT_EQ(hashed_partition(int64_min, 3), 2);  // -9223372036854775808 % 3 == -2
  EXPECT_EQ(hashed_partition(int64_max, 4), 3);
  EXPECT_EQ(hashed_partition(763543691661428748, 1), 0);
  // The keys of 0..3999 spread over four partitions about evenly.
  std::vector<int> counts(4);
  for (std::int32_t i = 0; i < 4000; ++i)
    ++counts[static_cast<std::size_t>(hashed_partition(hashed_index_key(value(i)), 4))];
  for (const int c : counts)
    EXPECT_GT(c, 850);
}

}  // namespace
}  // namespace denormd::bson
