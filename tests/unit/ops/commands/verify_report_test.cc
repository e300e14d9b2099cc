#include "ops/commands/verify_report.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::ops {
namespace {

verify_report sample(bool repair) {
  verify_report r;
  r.repair = repair;
  mapping_report copy;
  copy.mapping = "orders-customer";
  copy.kind = "copy";
  copy.reports_orphans = true;
  copy.source = "shop.customers";
  copy.target = "shop.orders";
  copy.checked = 150;
  copy.drifted = 3;
  copy.examples = {{bson::value(17), {"customer.name", "customer.city"}},
                   {bson::value(18), {"customer.email"}}};
  copy.orphaned = 1;
  copy.orphans_allowed = true;
  copy.orphan_examples = {{bson::value(40), bson::array{bson::value(999)}}};
  copy.repaired = repair ? 3 : 0;
  mapping_report recent;
  recent.mapping = "products-recent-reviews";
  recent.kind = "recent";
  recent.source = "shop.reviews";
  recent.target = "shop.products";
  recent.checked = 25;
  r.mappings = {copy, recent};
  return r;
}

TEST(ops_verify_report_test, totals) {
  EXPECT_EQ(sample(false).drifted(), 3u);
  EXPECT_EQ(sample(false).repaired(), 0u);
  EXPECT_EQ(sample(true).repaired(), 3u);
}

TEST(ops_verify_report_test, text) {
  const std::string text = to_text(sample(false));
  EXPECT_NE(
      text.find("orders-customer (copy shop.customers -> shop.orders): 150 checked, 3 drifted"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  _id 17: customer.name, customer.city\n"), std::string::npos);
  EXPECT_NE(text.find("... and 1 more"), std::string::npos);
  EXPECT_NE(text.find("1 reference a source document that does not exist (onSourceDelete \"keep\""),
            std::string::npos);
  EXPECT_NE(text.find("_id 40 ([999])"), std::string::npos);
  EXPECT_NE(text.find("products-recent-reviews (recent shop.reviews -> shop.products): 25 "
                      "checked, in line"),
            std::string::npos);
  EXPECT_NE(text.find("drift: 3 dependent(s) in 1 of 2 mapping(s)"), std::string::npos);
  EXPECT_NE(to_text(sample(true)).find("repaired 3"), std::string::npos);
  verify_report clean;
  EXPECT_EQ(to_text(clean), "in line: 0 dependent(s) of 0 mapping(s) checked\n");
}

TEST(ops_verify_report_test, json) {
  auto parsed = bson::parse_json(to_json(sample(true)));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed->get("clean"), bson::value(false));
  EXPECT_EQ(parsed->get("drifted")->to_double(), 3);
  EXPECT_EQ(parsed->get("repaired")->to_double(), 3);
  const auto& mappings = parsed->get("mappings")->as_array();
  ASSERT_EQ(mappings.size(), 2u);
  const auto& copy = mappings[0].as_document();
  EXPECT_EQ(copy.get("mapping")->as_string(), "orders-customer");
  EXPECT_EQ(copy.get("examples")->as_array().size(), 2u);
  EXPECT_EQ(copy.get("examples")->as_array()[0].as_document().get("_id")->to_double(), 17);
  EXPECT_EQ(*copy.get("orphansAllowed"), bson::value(true));
  EXPECT_EQ(copy.get("orphaned")->to_double(), 1);
  EXPECT_FALSE(mappings[1].as_document().contains("orphaned"));
}

TEST(ops_verify_report_test, a_failing_child_is_listed_and_not_clean) {
  verify_report r;
  mapping_report agg;
  agg.mapping = "customers-spent";
  agg.kind = "aggregate";
  agg.source = "shop.lines";
  agg.target = "shop.customers";
  agg.checked = 3;
  agg.failing = 2;
  agg.failing_examples = {{bson::value(1), bson::value(2), "$multiply only supports numeric types"},
                          {bson::value(5), bson::value(), "the server refused their aggregation"}};
  r.mappings = {agg};
  EXPECT_EQ(r.drifted(), 0u);
  EXPECT_FALSE(r.clean());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("  2 child(ren) on which an expression fails"), std::string::npos) << text;
  EXPECT_NE(text.find("    _id 2 of parent 1: $multiply only supports numeric types\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    the children of parent 5: the server refused"), std::string::npos);
  auto parsed = bson::parse_json(to_json(r)).value();
  EXPECT_EQ(*parsed.get("clean"), bson::value(false));
  EXPECT_EQ(parsed.get("failingChildren")->to_double(), 2);
  const auto& m = parsed.get("mappings")->as_array()[0].as_document();
  EXPECT_EQ(m.get("failingExamples")->as_array()[0].as_document().get("_id")->to_double(), 2);
}

}  // namespace
}  // namespace denormd::ops
