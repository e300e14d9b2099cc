#include "ops/commands/fanout_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace denormd::ops {
namespace {

TEST(ops_fanout_summary_test, empty_says_zero) {
  const fanout_summary s;
  EXPECT_EQ(s.keys(), 0);
  EXPECT_EQ(s.mean(), 0.0);
  EXPECT_EQ(s.percentile(0.5), 0);
  EXPECT_EQ(s.max(), 0);
  EXPECT_TRUE(s.top().empty());
}

TEST(ops_fanout_summary_test, percentiles_are_nearest_rank_over_the_keys) {
  fanout_summary s;
  // 100 keys with 1..100 dependents, added in a shuffled order.
  std::vector<int> counts(100);
  for (int i = 0; i < 100; ++i)
    counts[i] = i + 1;
  std::shuffle(counts.begin(), counts.end(), std::mt19937(7));
  for (int c : counts)
    s.add(bson::value(c * 1000), c);
  EXPECT_EQ(s.keys(), 100);
  EXPECT_EQ(s.dependents(), 5050);
  EXPECT_DOUBLE_EQ(s.mean(), 50.5);
  EXPECT_EQ(s.percentile(0.5), 50);
  EXPECT_EQ(s.percentile(0.99), 99);
  EXPECT_EQ(s.percentile(1.0), 100);
  EXPECT_EQ(s.percentile(0.001), 1);
  EXPECT_EQ(s.max(), 100);
}

TEST(ops_fanout_summary_test, one_heavy_key_leads_the_top_and_moves_only_the_tail) {
  fanout_summary s(3);
  for (int i = 1; i <= 40; ++i)
    s.add(bson::value(i), 3);
  s.add(bson::value(std::string("the big one")), 5000);
  s.add(bson::value(41), 4);
  const auto top = s.top();
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].key, bson::value(std::string("the big one")));
  EXPECT_EQ(top[0].dependents, 5000);
  EXPECT_EQ(top[1].key, bson::value(41));
  // Equal counts: the smallest key in BSON order, whatever order they came in.
  EXPECT_EQ(top[2].key, bson::value(1));
  EXPECT_EQ(top[2].dependents, 3);
  EXPECT_EQ(s.max(), 5000);
  // 42 keys: the 41st is 4, the 42nd (the p99's rank, ceil(0.99 * 42)) the heavy one.
  EXPECT_EQ(s.percentile(0.5), 3);
  EXPECT_EQ(s.percentile(0.97), 4);
  EXPECT_EQ(s.percentile(0.99), 5000);
}

TEST(ops_fanout_summary_test, keys_without_dependents_are_left_out) {
  fanout_summary s;
  s.add(bson::value(1), 0);
  s.add(bson::value(2), -4);
  s.add(bson::value(3), 2);
  EXPECT_EQ(s.keys(), 1);
  EXPECT_EQ(s.dependents(), 2);
}

TEST(ops_fanout_summary_test, memory_grows_with_distinct_counts_not_keys) {
  fanout_summary s(10);
  for (int i = 0; i < 200000; ++i)
    s.add(bson::value(i), 1 + i % 7);
  EXPECT_EQ(s.keys(), 200000);
  EXPECT_EQ(s.distinct_counts(), 7u);
  EXPECT_EQ(s.top().size(), 10u);
  for (const auto& k : s.top())
    EXPECT_EQ(k.dependents, 7);
  std::int64_t keys = 0;
  s.for_each_count([&](std::int64_t count, std::int64_t n) {
    EXPECT_GE(count, 1);
    keys += n;
  });
  EXPECT_EQ(keys, 200000);
}

}  // namespace
}  // namespace denormd::ops
