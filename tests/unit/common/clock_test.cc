#include "common/clock.h"

#include <gtest/gtest.h>

namespace denormd {
namespace {

TEST(clock_test, iso8601_writes_utc_with_milliseconds) {
  EXPECT_EQ(iso8601(1795293672123), "2026-11-21T20:41:12.123Z");
  EXPECT_EQ(iso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(iso8601(253402300799999), "9999-12-31T23:59:59.999Z");
}

TEST(clock_test, times_before_1970_round_down) {
  EXPECT_EQ(iso8601(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(iso8601(-1000), "1969-12-31T23:59:59.000Z");
}

TEST(clock_test, milliseconds_can_be_left_out_when_zero) {
  EXPECT_EQ(iso8601(1704153600000, iso_millis::when_nonzero), "2024-01-02T00:00:00Z");
  EXPECT_EQ(iso8601(1704153600007, iso_millis::when_nonzero), "2024-01-02T00:00:00.007Z");
  std::string out = "at ";
  append_iso8601(out, 1704153600000);
  EXPECT_EQ(out, "at 2024-01-02T00:00:00.000Z");
}

TEST(clock_test, sleep_unless_stopped_returns_false_once_stopped) {
  std::stop_source stop;
  EXPECT_TRUE(sleep_unless_stopped(stop.get_token(), std::chrono::milliseconds(1)));
  stop.request_stop();
  // Returns at once although the sleep is far longer than the test's time limit.
  EXPECT_FALSE(sleep_unless_stopped(stop.get_token(), std::chrono::hours(1)));
}

}  // namespace
}  // namespace denormd
