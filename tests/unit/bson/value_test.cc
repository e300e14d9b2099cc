#include "bson/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bson/json.h"

namespace denormd::bson {
namespace {

value j(const char* json) {
  auto doc = parse_json(std::string("{\"v\":") + json + "}");
  EXPECT_TRUE(doc.has_value()) << json;
  return *doc->get("v");
}

TEST(value_test, canonical_order_across_types) {
  // MinKey < null < numbers < strings < objects < arrays < binData < ObjectId < bool < date
  // < timestamp < regex < MaxKey
  const char* ordered[] = {R"({"$minKey":1})",
                           "null",
                           "1",
                           R"("a")",
                           "{}",
                           "[]",
                           R"({"$binary":{"base64":"AA==","subType":"00"}})",
                           R"({"$oid":"000000000000000000000000"})",
                           "false",
                           R"({"$date":"2020-01-01T00:00:00Z"})",
                           R"({"$timestamp":{"t":1,"i":1}})",
                           R"({"$regularExpression":{"pattern":"a","options":""}})",
                           R"({"$maxKey":1})"};
  for (std::size_t i = 0; i + 1 < std::size(ordered); ++i) {
    EXPECT_LT(compare(j(ordered[i]), j(ordered[i + 1])), 0)
        << ordered[i] << " < " << ordered[i + 1];
    EXPECT_GT(compare(j(ordered[i + 1]), j(ordered[i])), 0);
  }
}

TEST(value_test, numbers_compare_by_value_across_types) {
  EXPECT_EQ(compare(value(1), value(1.0)), 0);
  EXPECT_EQ(compare(value(std::int64_t{1}), value(1)), 0);
  EXPECT_LT(compare(value(1), value(1.5)), 0);
  EXPECT_GT(compare(value(std::int64_t{3}), value(2.5)), 0);
  EXPECT_EQ(compare(j(R"({"$numberDecimal":"2.50"})"), value(2.5)), 0);
  // 2^53 + 1 is not representable as a double: the int64 must still compare greater.
  EXPECT_GT(compare(value(std::int64_t{9007199254740993}), value(9007199254740992.0)), 0);
  EXPECT_LT(compare(value(std::nan("")), value(-1e300)), 0);
  EXPECT_EQ(compare(value(std::nan("")), value(std::nan(""))), 0);
  EXPECT_LT(compare(value(std::numeric_limits<std::int64_t>::max()), value(1e19)), 0);
}

TEST(value_test, strict_equality_keeps_types_apart) {
  EXPECT_NE(value(1), value(1.0));
  EXPECT_EQ(value("a"), value(std::string("a")));
  EXPECT_EQ(j(R"({"a":[1,{"b":2}]})"), j(R"({"a":[1,{"b":2}]})"));
  EXPECT_NE(j(R"({"a":1,"b":2})"), j(R"({"b":2,"a":1})"));
}

TEST(value_test, documents_compare_field_by_field_then_length) {
  EXPECT_LT(compare(j(R"({"a":1})"), j(R"({"a":2})")), 0);
  EXPECT_LT(compare(j(R"({"a":1})"), j(R"({"a":1,"b":0})")), 0);
  EXPECT_LT(compare(j(R"({"a":1})"), j(R"({"b":0})")), 0);
  // type rank of the value is compared before the field name
  EXPECT_LT(compare(j(R"({"b":1})"), j(R"({"a":"x"})")), 0);
  EXPECT_LT(compare(j("[1,2]"), j("[1,2,0]")), 0);
  EXPECT_GT(compare(j("[2]"), j("[1,9]")), 0);
}

TEST(value_test, document_set_replaces_in_place_and_erase_removes) {
  document d{{"a", 1}, {"b", 2}};
  d.set("a", "x");
  d.set("c", true);
  EXPECT_EQ(to_json(d), R"({"a":"x","b":2,"c":true})");
  EXPECT_TRUE(d.erase("b"));
  EXPECT_FALSE(d.erase("zz"));
  EXPECT_EQ(to_json(d), R"({"a":"x","c":true})");
}

TEST(value_test, find_path_follows_documents_and_indexes) {
  const auto d = *parse_json(R"({"a":{"b":[{"c":1},{"c":2}]},"x":5})");
  ASSERT_NE(d.find_path("a.b.1.c"), nullptr);
  EXPECT_EQ(*d.find_path("a.b.1.c"), value(2));
  EXPECT_EQ(d.find_path("a.b.2.c"), nullptr);
  EXPECT_EQ(d.find_path("a.b.c"), nullptr);  // no array expansion here
  EXPECT_EQ(d.find_path("a.b.01"), nullptr);
  EXPECT_EQ(d.find_path("x.y"), nullptr);
  EXPECT_EQ(*d.find_path("x"), value(5));
}

TEST(value_test, oid_hex_is_lowercase_in_byte_order) {
  oid o;
  for (std::size_t i = 0; i < o.bytes.size(); ++i)
    o.bytes[i] = static_cast<std::uint8_t>(0x10 * i + 0x0f - i);
  EXPECT_EQ(o.to_hex(), "0f1e2d3c4b5a69788796a5b4");
  // Extended JSON in, the same text out (upper-case input is read, lower-case written).
  const auto d = parse_json(R"({"_id":{"$oid":"5F1D7A3B9C8E4A2B1C0D9E8F"}})");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->get("_id")->as<oid>().to_hex(), "5f1d7a3b9c8e4a2b1c0d9e8f");
}

TEST(value_test, type_names_match_mongodb) {
  EXPECT_EQ(type_name(type::document), "object");
  EXPECT_EQ(type_name(type::int32), "int");
  EXPECT_EQ(type_name(type::int64), "long");
  EXPECT_EQ(value(2.0).kind(), type::double_);
  EXPECT_EQ(j(R"({"$numberLong":"5"})").kind(), type::int64);
}

}  // namespace
}  // namespace denormd::bson
