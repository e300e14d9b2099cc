#include "bson/json.h"

#include <gtest/gtest.h>

#include "bson/convert.h"

namespace denormd::bson {
namespace {

TEST(json_test, relaxed_output_is_compact_and_typed) {
  const auto d = parse_json(R"({"i":1,"l":{"$numberLong":"9000000000"},"d":2.0,"s":"x\"y\n",
    "o":{"$oid":"5f1d7a3b9c8e4a2b1c0d9e8f"},"t":{"$date":"2024-03-01T12:00:00.250Z"},
    "n":null,"b":[true,false],"ts":{"$timestamp":{"t":5,"i":2}}})");
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(to_json(*d),
            R"({"i":1,"l":9000000000,"d":2.0,"s":"x\"y\n","o":{"$oid":"5f1d7a3b9c8e4a2b1c0d9e8f"},)"
            R"("t":{"$date":"2024-03-01T12:00:00.250Z"},"n":null,"b":[true,false],)"
            R"("ts":{"$timestamp":{"t":5,"i":2}}})");
}

TEST(json_test, canonical_output_wraps_numbers_and_dates) {
  const auto d = parse_json(R"({"i":1,"d":1.5,"t":{"$date":"1970-01-01T00:00:01Z"}})");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(to_json(*d, json_mode::canonical),
            R"({"i":{"$numberInt":"1"},"d":{"$numberDouble":"1.5"},)"
            R"("t":{"$date":{"$numberLong":"1000"}}})");
}

TEST(json_test, every_type_survives_json_and_bson_round_trips) {
  const char* text =
      R"({"a":{"$binary":{"base64":"AQIDBA==","subType":"04"}},"b":{"$undefined":true},)"
      R"j("c":{"$regularExpression":{"pattern":"^a","options":"i"}},"d":{"$code":"x()"},)j"
      R"("e":{"$numberDecimal":"1.25"},"f":{"$minKey":1},"g":{"$maxKey":1},)"
      R"("h":{"$date":{"$numberLong":"-5"}},"i":{"$numberDouble":"-Infinity"},"j":{"k":[[]]}})";
  const auto d = parse_json(text);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(to_json(*d), text);
  const auto back = from_bson(*to_bson(*d));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, *d);
  const auto again = parse_json(to_json(*d, json_mode::canonical));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *d);
}

TEST(json_test, bad_json_is_an_error_not_a_crash) {
  for (const char* bad : {"", "{", "[1]", R"({"a":})", R"({"a":{"$oid":"xyz"}})", "{\"a\":1}}"}) {
    EXPECT_FALSE(parse_json(bad).has_value()) << bad;
  }
}

TEST(json_test, deep_nesting_is_an_error_that_says_so) {
  for (const int levels : {150, 100000}) {
    const std::string text = std::string("{\"a\":").append(levels, '[') + "1" +
                             std::string(static_cast<std::size_t>(levels), ']') + "}";
    const auto r = parse_json(text);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("nested too deeply"), std::string::npos) << r.error().message;
  }
  std::string ok = "1";
  for (int i = 0; i < 90; ++i)
    ok = "{\"d\":" + ok + "}";
  EXPECT_TRUE(parse_json(ok).has_value());
}

TEST(json_test, corrupt_bson_is_an_error) {
  std::vector<std::uint8_t> bytes;
  append_bytes(*parse_json(R"({"a":{"b":"hello"}})"), bytes);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<std::uint8_t> broken(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(from_bson(broken).has_value()) << cut;
  }
  auto flipped = bytes;
  flipped[4] = 0x7A;  // unknown element type
  EXPECT_FALSE(from_bson(flipped).has_value());
  EXPECT_TRUE(from_bson(bytes).has_value());
}

}  // namespace
}  // namespace denormd::bson
