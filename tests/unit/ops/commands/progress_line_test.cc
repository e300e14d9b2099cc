#include "ops/commands/progress_line.h"

#include <gtest/gtest.h>

namespace denormd::ops {
namespace {

TEST(ops_progress_line_test, counts_with_thousands_separators) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
}

TEST(ops_progress_line_test, durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(-3), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7260), "2h01m");
}

TEST(ops_progress_line_test, rate_and_eta_from_this_run_only) {
  // 10,000 done by this run in 5 s, 2,000 by the run it continues: 8,000 left at 2,000/s.
  const backfill_progress p{"orders-customer", 12000, 10000, 20000, 5.0, false};
  EXPECT_DOUBLE_EQ(rate_per_second(p), 2000.0);
  ASSERT_TRUE(eta_seconds(p).has_value());
  EXPECT_DOUBLE_EQ(*eta_seconds(p), 4.0);
  EXPECT_EQ(progress_line(p), "orders-customer: 12,000/20,000 documents (60%), 2,000/s, ETA 4s");
}

TEST(ops_progress_line_test, no_eta_without_total_or_rate) {
  EXPECT_FALSE(eta_seconds(backfill_progress{"m", 5, 5, std::nullopt, 1.0, false}));
  EXPECT_FALSE(eta_seconds(backfill_progress{"m", 0, 0, 10, 0.0, false}));
  EXPECT_EQ(progress_line(backfill_progress{"m", 0, 0, std::nullopt, 0.0, false}),
            "m: 0 documents, 0/s");
}

TEST(ops_progress_line_test, a_grown_collection_never_gives_a_negative_eta) {
  const backfill_progress p{"m", 150, 150, 100, 1.0, false};
  EXPECT_DOUBLE_EQ(*eta_seconds(p), 0.0);
  EXPECT_EQ(progress_line(p), "m: 150/100 documents (100%), 150/s, ETA 0s");
}

TEST(ops_progress_line_test, done_line) {
  EXPECT_EQ(progress_line(backfill_progress{"m", 20000, 20000, 20000, 10.0, true}),
            "m: 20,000 documents, 2,000/s, done in 10s");
}

}  // namespace
}  // namespace denormd::ops
