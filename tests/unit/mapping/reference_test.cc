#include "mapping/reference.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "query_operators.h"

namespace denormd::mapping {
namespace {

bson::value json_value(const std::string& text) {
  auto doc = bson::parse_json("{\"v\":" + text + "}");
  EXPECT_TRUE(doc.has_value()) << text;
  return *doc->get("v");
}

TEST(reference_test, plain_values_are_references) {
  for (const char* text : {"1", "\"abc\"", "null", "{\"$oid\":\"65a1b2c3d4e5f60718293a4b\"}",
                           "{\"a\":1,\"b\":{\"$gt\":1}}", "{\"$date\":\"2024-01-01T00:00:00Z\"}",
                           "{\"$minKey\":1}", "true", "2.5"}) {
    EXPECT_FALSE(reference_problem(json_value(text)).has_value()) << text;
  }
}

TEST(reference_test, operators_arrays_regexes_and_undefined_are_not) {
  for (const char* text :
       {"{\"$ne\":null}", "{\"$gt\":-1}", "{\"$exists\":true}", "{\"a\":1,\"$in\":[1]}", "[1,2]",
        "[]", "{\"$regularExpression\":{\"pattern\":\".*\",\"options\":\"\"}}",
        "{\"$undefined\":true}"}) {
    auto problem = reference_problem(json_value(text));
    ASSERT_TRUE(problem.has_value()) << text;
    EXPECT_FALSE(problem->empty());
  }
  EXPECT_NE(reference_problem(json_value("{\"$ne\":null}"))->find("\"$ne\""), std::string::npos);
}

TEST(reference_test, literal_and_key_match) {
  const bson::value op = json_value("{\"$ne\":null}");
  EXPECT_EQ(bson::to_json(literal(op)), "{\"$eq\":{\"$ne\":null}}");
  EXPECT_EQ(bson::to_json(key_match("customerId", 5)),
            "{\"$eq\":5,\"$not\":{\"$type\":\"array\"}}");
  // _id is never an array: plain $eq, as an index on _id serves best.
  EXPECT_EQ(bson::to_json(key_match("_id", 5)), "{\"$eq\":5}");
  EXPECT_EQ(bson::to_json(key_match("ref._id", 5)), "{\"$eq\":5}");
}

TEST(reference_test, reasons_name_the_mapping_field_document_and_a_bounded_value) {
  const bson::value id = 7;
  const bson::value huge = std::string(100000, 'x');
  const std::string reason = reference_reason({"m", "parentKey", "productId", "shop.reviews", &id},
                                              bson::value(bson::array{huge}), "an array");
  EXPECT_NE(reason.find("mapping \"m\""), std::string::npos) << reason;
  EXPECT_NE(reason.find("parentKey \"productId\" of shop.reviews {\"_id\": 7}"), std::string::npos)
      << reason;
  EXPECT_LT(reason.size(), 600u);
  // Cut on a character boundary: no broken UTF-8 in logs. "é" is two bytes; with the opening
  // quote, byte 200 is the second byte of one, so the cut falls before it.
  std::string accents;
  for (int i = 0; i < 300; ++i)
    accents += "\xC3\xA9";
  const std::string cut = describe_value(accents, 200);
  EXPECT_EQ(cut.size(), 199u + 3u) << cut;
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
}

// Whether a document with this _id comes after `last` by the filter.
bool after(const bson::value& last, const bson::value& id) {
  // $type is the test server's: denormd never evaluates this filter itself.
  auto m = mongo_emulator::engine::compile_query(after_key_filter(last));
  EXPECT_TRUE(m.has_value());
  return m && m->matches(bson::document{{"_id", id}});
}

TEST(reference_test, after_key_filter_continues_in_id_order_across_type_brackets) {
  const bson::value five(5);
  EXPECT_FALSE(after(five, bson::value(4)));
  EXPECT_FALSE(after(five, bson::value(5.0)));
  EXPECT_TRUE(after(five, bson::value(5.5)));
  EXPECT_TRUE(after(five, bson::value(std::int64_t{6})));
  // MongoDB's $gt stays in its type bracket: later brackets are added explicitly.
  EXPECT_TRUE(after(five, bson::value("a")));
  EXPECT_TRUE(after(five, json_value(R"({"$oid":"65a1b2c3d4e5f60718293a4b"})")));
  EXPECT_TRUE(after(five, bson::value(bson::date_time{0})));
  EXPECT_FALSE(after(five, bson::value(bson::null_t{})));
  EXPECT_FALSE(after(five, bson::value(bson::min_key{})));

  const bson::value b("b");
  EXPECT_FALSE(after(b, bson::value("a")));
  EXPECT_TRUE(after(b, bson::value("c")));
  EXPECT_FALSE(after(b, bson::value(100)));
  EXPECT_TRUE(after(b, json_value(R"({"$oid":"65a1b2c3d4e5f60718293a4b"})")));
}

TEST(reference_test, after_key_filter_nothing_comes_after_max_key) {
  EXPECT_EQ(after_key_filter(bson::value(bson::max_key{})),
            (bson::document{{"_id", bson::document{{"$gt", bson::max_key{}}}}}));
}

}  // namespace
}  // namespace denormd::mapping
