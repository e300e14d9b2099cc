#include "value_text.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace mongo_emulator::engine {
namespace {

namespace bson = denormd::bson;

bson::document doc(std::string_view json) {
  auto d = bson::parse_json(json);
  EXPECT_TRUE(d) << json;
  return d ? *d : bson::document{};
}

TEST(value_text, prints_like_mongodb_bson_to_string) {
  EXPECT_EQ(document_text(doc(R"({"a": 1, "b": "x", "c": [1, 2.5], "d": {}, "e": []})")),
            R"({ a: 1, b: "x", c: [ 1, 2.5 ], d: {}, e: [] })");
  EXPECT_EQ(document_text(doc("{}")), "{}");
  EXPECT_EQ(element_text("a", bson::value(5.0)), "a: 5.0");
  EXPECT_EQ(element_text("a", bson::value(std::int64_t{7})), "a: 7");
  EXPECT_EQ(value_text(bson::value(true)), "true");
  EXPECT_EQ(value_text(bson::value()), "null");
  EXPECT_EQ(value_text(doc(R"({"x": {"$oid": "0123456789abcdef01234567"}})").fields()[0].val),
            "ObjectId('0123456789abcdef01234567')");
  EXPECT_EQ(value_text(bson::value(bson::date_time{42})), "new Date(42)");
  EXPECT_EQ(value_text(bson::value(bson::timestamp{1, 2})), "Timestamp(1, 2)");
}

TEST(value_text, doubles_follow_append_double_nice) {
  EXPECT_EQ(double_text(1.5), "1.5");
  EXPECT_EQ(double_text(2.0), "2.0");
  EXPECT_EQ(double_text(-0.0), "-0.0");
  EXPECT_EQ(double_text(1e30), "1e+30.0");  // MongoDB only looks for '.', 'E' and 'N'
  EXPECT_EQ(double_text(0.1), "0.1");
}

}  // namespace
}  // namespace mongo_emulator::engine
