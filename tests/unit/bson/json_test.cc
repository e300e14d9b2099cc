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

// Every type in canonical form, and back through BSON: the writer and the converters cover
// each type (they are split per type; issue 32).
TEST(json_test, every_type_in_canonical_form_and_through_bson) {
  const char* text =
      R"({"a":{"$numberDouble":"2.5"},"b":{"$numberInt":"-3"},"c":{"$numberLong":"9000000000"},)"
      R"("d":"s","e":{"f":[{"$numberInt":"1"},[]]},"g":{"$binary":{"base64":"AQI=","subType":"80"}},)"
      R"("h":{"$undefined":true},"i":{"$oid":"5f1d7a3b9c8e4a2b1c0d9e8f"},"j":true,"k":false,)"
      R"("l":{"$date":{"$numberLong":"1000"}},"m":null,)"
      R"j("n":{"$regularExpression":{"pattern":"^a(b)","options":"im"}},"o":{"$code":"f()"},)j"
      R"("p":{"$symbol":"sym"},"q":{"$timestamp":{"t":5,"i":2}},"r":{"$numberDecimal":"1.25"},)"
      R"("s":{"$minKey":1},"t":{"$maxKey":1},"u":{"$numberDouble":"NaN"}})";
  const auto d = parse_json(text);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(to_json(*d, json_mode::canonical), text);
  const auto back = from_bson(*to_bson(*d));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(to_json(*back, json_mode::canonical), text);
  EXPECT_EQ(
      to_json(*back),
      R"({"a":2.5,"b":-3,"c":9000000000,"d":"s","e":{"f":[1,[]]},)"
      R"("g":{"$binary":{"base64":"AQI=","subType":"80"}},"h":{"$undefined":true},)"
      R"("i":{"$oid":"5f1d7a3b9c8e4a2b1c0d9e8f"},"j":true,"k":false,)"
      R"("l":{"$date":"1970-01-01T00:00:01Z"},"m":null,)"
      R"j("n":{"$regularExpression":{"pattern":"^a(b)","options":"im"}},"o":{"$code":"f()"},)j"
      R"("p":{"$symbol":"sym"},"q":{"$timestamp":{"t":5,"i":2}},"r":{"$numberDecimal":"1.25"},)"
      R"("s":{"$minKey":1},"t":{"$maxKey":1},"u":{"$numberDouble":"NaN"}})");
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
