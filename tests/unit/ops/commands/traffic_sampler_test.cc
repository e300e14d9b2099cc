#include "ops/commands/traffic_sampler.h"

#include <gtest/gtest.h>

#include "../test_mappings.h"

namespace denormd::ops {
namespace {

using testing::customer_copy;
using testing::doc;
using testing::load_one;

TEST(ops_traffic_sampler_test, prometheus_text_gives_each_sample_with_its_labels) {
  const auto samples = parse_prometheus_text(
      "# HELP denormd_fanout Dependents...\n"
      "# TYPE denormd_fanout histogram\n"
      "denormd_fanout_count{mapping=\"orders-customer\"} 4\n"
      "denormd_fanout_sum{mapping=\"orders-customer\"} 5014\r\n"
      "denormd_fanout_bucket{mapping=\"orders-customer\",le=\"+Inf\"} 4\n"
      "\n"
      "denormd_instances 3\n"
      "odd{mapping=\"a \\\"quoted\\\" \\\\ name\"} 1e3\n");
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_EQ(samples->size(), 5u);
  EXPECT_EQ((*samples)[2].labels.at("le"), "+Inf");
  EXPECT_EQ((*samples)[3].name, "denormd_instances");
  EXPECT_TRUE((*samples)[3].labels.empty());
  EXPECT_EQ((*samples)[4].labels.at("mapping"), "a \"quoted\" \\ name");
  EXPECT_DOUBLE_EQ((*samples)[4].value, 1000);
  const auto fanout = fanout_by_mapping(*samples);
  ASSERT_EQ(fanout.size(), 1u);  // only denormd_fanout's sums and counts
  EXPECT_DOUBLE_EQ(fanout.at("orders-customer").count, 4);
  EXPECT_DOUBLE_EQ(fanout.at("orders-customer").sum, 5014);
  EXPECT_FALSE(parse_prometheus_text("denormd_x{mapping=\"a} 1\n"));
  EXPECT_FALSE(parse_prometheus_text("denormd_x nothing\n"));
}

TEST(ops_traffic_sampler_test, top_gives_each_namespaces_counts) {
  const auto top = parse_top(doc(R"({"totals": {"note": "all times in microseconds",
      "shop.orders": {"total": {"time": 9, "count": 12}, "queries": {"time": 3, "count": 10},
                      "getmore": {"time": 1, "count": 2}, "insert": {"time": 0, "count": 0},
                      "update": {"time": 5, "count": {"$numberLong": "7"}},
                      "remove": {"time": 0, "count": 1}}}, "ok": 1})"));
  ASSERT_EQ(top.size(), 1u);
  const auto& o = top.at("shop.orders");
  EXPECT_EQ(o.queries, 10);
  EXPECT_EQ(o.getmore, 2);
  EXPECT_EQ(o.update, 7);
  EXPECT_EQ(o.remove, 1);
  EXPECT_TRUE(parse_top(doc(R"({"ok": 1})")).empty());
}

traffic_reading reading(std::int64_t at_ms, double count, double sum, std::int64_t reads,
                        std::int64_t updates) {
  traffic_reading r;
  r.at_ms = at_ms;
  r.fanout = std::map<std::string, fanout_totals>{{"orders-customer", {sum, count}}};
  r.top = std::map<std::string, top_counts>{{"shop.orders", top_counts{reads, 0, 0, 0, 0}},
                                            {"shop.customers", top_counts{0, 0, 0, updates, 0}}};
  return r;
}

TEST(ops_traffic_sampler_test, the_window_gives_changes_amplification_reads_and_ratio) {
  const auto m = load_one(customer_copy);
  // 10 s: 20 changes that wrote 60 documents, 4,000 reads of the orders.
  const auto t =
      traffic_of(m, reading(1000, 100, 900, 1000, 500), reading(11000, 120, 960, 5000, 9999), 7.0);
  EXPECT_DOUBLE_EQ(t.window_seconds, 10);
  EXPECT_DOUBLE_EQ(*t.changes_per_second, 2);
  EXPECT_EQ(t.changes_from, "denormd: changes that made writes for the mapping");
  EXPECT_DOUBLE_EQ(*t.amplification, 3);
  EXPECT_EQ(t.amplification_from, "denormd, during the window");
  EXPECT_DOUBLE_EQ(*t.reads_per_second, 400);
  EXPECT_DOUBLE_EQ(*t.read_update_ratio, 200);
  EXPECT_TRUE(t.missing.empty());
}

TEST(ops_traffic_sampler_test, without_changes_in_the_window_the_amplification_is_since_start) {
  const auto m = load_one(customer_copy);
  const auto t = traffic_of(m, reading(0, 10, 50, 0, 0), reading(5000, 10, 50, 100, 0), 7.0);
  EXPECT_DOUBLE_EQ(*t.changes_per_second, 0);
  EXPECT_DOUBLE_EQ(*t.amplification, 5);
  EXPECT_EQ(t.amplification_from, "denormd, since it started");
  EXPECT_FALSE(t.read_update_ratio);
}

TEST(ops_traffic_sampler_test, without_denormd_the_changes_are_the_sources_writes_from_top) {
  const auto m = load_one(customer_copy);
  auto before = reading(0, 0, 0, 100, 40);
  auto after = reading(4000, 0, 0, 500, 48);
  before.fanout.reset();
  after.fanout.reset();
  after.metrics_error = "denormd's metrics: GET http://x/metrics: Connection refused";
  const auto t = traffic_of(m, before, after, 7.5);
  EXPECT_DOUBLE_EQ(*t.changes_per_second, 2);
  EXPECT_EQ(t.changes_from, "top: every write to shop.customers, mapped fields or not");
  EXPECT_DOUBLE_EQ(*t.amplification, 7.5);
  EXPECT_EQ(t.amplification_from, "the data");
  EXPECT_DOUBLE_EQ(*t.read_update_ratio, 50);
  ASSERT_EQ(t.missing.size(), 1u);
  EXPECT_EQ(t.missing[0], after.metrics_error);
}

TEST(ops_traffic_sampler_test, a_restart_or_a_mapping_denormd_does_not_run_is_said) {
  const auto m = load_one(customer_copy);
  auto t = traffic_of(m, reading(0, 10, 50, 0, 0), reading(1000, 2, 4, 0, 0), std::nullopt);
  EXPECT_EQ(t.missing, std::vector<std::string>{"denormd restarted during the window"});
  EXPECT_EQ(t.changes_from, "top: every write to shop.customers, mapped fields or not");
  auto other = reading(1000, 2, 4, 0, 0);
  other.fanout = std::map<std::string, fanout_totals>{};
  t = traffic_of(m, reading(0, 1, 1, 0, 0), other, std::nullopt);
  ASSERT_EQ(t.missing.size(), 1u);
  EXPECT_NE(t.missing[0].find("no denormd_fanout series of orders-customer"), std::string::npos);
  // `top` refused: no reads, and why.
  auto refused = reading(1000, 2, 4, 0, 0);
  refused.top.reset();
  refused.top_error = "target reads: the server refused top: not authorized (code 13)";
  t = traffic_of(m, reading(0, 1, 1, 0, 0), refused, 1.0);
  EXPECT_FALSE(t.reads_per_second);
  EXPECT_FALSE(t.read_update_ratio);
  EXPECT_EQ(t.missing.back(), refused.top_error);
}

}  // namespace
}  // namespace denormd::ops
