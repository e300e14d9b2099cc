#include "ops/commands/cost_report.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::ops {
namespace {

mapping_cost copy_cost() {
  mapping_cost c;
  c.mapping = "orders-customer";
  c.kind = "copy";
  c.source = "shop.customers";
  c.target = "shop.orders";
  c.data.fanout.per = "targets per source key";
  c.data.fanout.extent = read_extent{"shop.orders", 5150, 5150};
  for (int i = 1; i <= 40; ++i)
    c.data.fanout.summary.add(bson::value(i), i == 7 ? 5002 : 3);
  c.data.bytes.extent = read_extent{"shop.customers", 40, 40};
  c.data.bytes.per_copy = 80;
  c.data.bytes.added = 80.0 * 5119;
  return c;
}

traffic_figures traffic(double reads, double changes, double amplification) {
  traffic_figures t;
  t.window_seconds = 10;
  t.reads_per_second = reads;
  t.changes_per_second = changes;
  t.changes_from = "denormd: changes that made writes for the mapping";
  t.amplification = amplification;
  t.amplification_from = "denormd, during the window";
  if (changes > 0) t.read_update_ratio = reads / changes;
  return t;
}

TEST(ops_cost_report_test, the_verdict_weighs_reads_against_the_documents_written) {
  auto c = copy_cost();
  c.traffic = traffic(400, 2, 3);  // 400 reads/s, 6 documents written/s
  EXPECT_EQ(verdict(c),
            "worth it: shop.orders is read 200x as often as shop.customers changes, and each "
            "change writes 3 documents (66.7 reads per document written)");
  c.traffic = traffic(400, 2, 50);  // 100 written/s: 4 reads each
  EXPECT_EQ(verdict(c).substr(0, 12), "borderline: ");
  c.traffic = traffic(400, 2, 5002);
  EXPECT_EQ(verdict(c),
            "think again: shop.orders is read 200x as often as shop.customers changes, and each "
            "change writes 5,002 documents (0.04 reads per document written)");
  c.traffic = traffic(0, 2, 1);
  EXPECT_EQ(verdict(c),
            "think again: shop.orders was not read in 10.0 s while shop.customers changed 2 "
            "times/s, and each change writes 1 document");
  c.traffic = traffic(5, 0, 3);
  EXPECT_EQ(verdict(c).substr(0, 17), "worth it so far: ");
  c.traffic = traffic(0, 0, 3);
  EXPECT_EQ(verdict(c).substr(0, 12), "no verdict: ");
}

TEST(ops_cost_report_test, no_traffic_is_no_verdict_with_why) {
  auto c = copy_cost();
  c.traffic_note = "target reads: the server refused top: not authorized (code 13)";
  EXPECT_EQ(verdict(c),
            "no verdict: it needs the target's reads and the source's changes per second "
            "(target reads: the server refused top: not authorized (code 13))");
}

TEST(ops_cost_report_test, a_parent_near_the_document_limit_is_think_again_whatever_the_traffic) {
  mapping_cost c;
  c.mapping = "hosts-recent-logs";
  c.kind = "recent";
  c.source = "shop.logmsgs";
  c.target = "shop.hosts";
  c.traffic = traffic(1000, 1, 1);
  c.data.bytes.largest.push_back(parent_size{bson::value("web-01"), 9 << 20, 12 << 20});
  EXPECT_EQ(verdict(c),
            "think again: with its array full, the largest shop.hosts document (\"web-01\") would "
            "be 75.0% of MongoDB's 16 MiB limit");
  c.data.bytes.largest.front().at_limit_bytes = 1 << 20;
  EXPECT_EQ(verdict(c).substr(0, 10), "worth it: ");
}

TEST(ops_cost_report_test, the_data_amplification_is_the_mean_fan_out_for_a_copy_one_otherwise) {
  auto c = copy_cost();
  EXPECT_NEAR(*data_amplification(c), (5002.0 + 39 * 3) / 40, 1e-9);
  c.data.fanout.extent = read_extent{"shop.orders", 51500, 5150};  // a sample: scaled
  EXPECT_NEAR(*data_amplification(c), 10 * (5002.0 + 39 * 3) / 40, 1e-9);
  c.kind = "recent";
  EXPECT_EQ(*data_amplification(c), 1.0);
  c.data.fanout.error = "cannot count shop.orders: refused";
  EXPECT_FALSE(data_amplification(c));
}

TEST(ops_cost_report_test, json_and_text_show_the_figures_scaled_when_sampled) {
  cost_report r;
  r.mappings.push_back(copy_cost());
  r.mappings.back().data.fanout.extent = read_extent{"shop.orders", 10300, 5150};
  r.mappings.back().traffic = traffic(400, 2, 3);
  r.mappings.back().verdict = verdict(r.mappings.back());
  const auto parsed = bson::parse_json(to_json(r));
  ASSERT_TRUE(parsed);
  const auto& m = parsed->get("mappings")->as_array().front().as_document();
  const auto& f = m.get("fanOut")->as_document();
  EXPECT_EQ(bson::to_json(*f.get("max")), "10004");
  EXPECT_EQ(bson::to_json(*f.get("p50")), "6");
  EXPECT_EQ(bson::to_json(f.get("top")->as_array().front()), R"({"key":7,"dependents":10004})");
  EXPECT_EQ(bson::to_json(*f.get("read")),
            R"({"collection":"shop.orders","documents":10300,"read":5150,"sampled":true,)"
            R"("scale":2.0})");
  EXPECT_EQ(bson::to_json(*m.get("addedBytes")), "409520");
  EXPECT_EQ(bson::to_json(*m.get("traffic")->as_document().get("readUpdateRatio")), "200.0");
  const std::string text = to_text(r);
  EXPECT_NE(text.find("orders-customer (copy, shop.customers -> shop.orders)\n"),
            std::string::npos);
  EXPECT_NE(text.find("max 10,004 over 40 keys (read a sample of 5,150 of the 10,300 in "
                      "shop.orders, counts scaled by 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  most: 7 (10,004), 1 (6), 2 (6), 3 (6), 4 (6)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  storage: adds about 400 KiB to shop.orders (80 bytes per copy"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  verdict: worth it: "), std::string::npos);
}

TEST(ops_cost_report_test, bytes_read_as_people_do) {
  EXPECT_EQ(format_bytes(0), "0 bytes");
  EXPECT_EQ(format_bytes(1023), "1,023 bytes");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(16.0 * 1024 * 1024), "16.0 MiB");
  EXPECT_EQ(format_bytes(3.5 * 1024 * 1024 * 1024 * 1024), "3.5 TiB");
}

}  // namespace
}  // namespace denormd::ops
