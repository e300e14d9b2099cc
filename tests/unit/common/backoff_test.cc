#include "common/backoff.h"

#include <gtest/gtest.h>

namespace denormd {
namespace {

using std::chrono::milliseconds;

TEST(backoff_test, the_delay_doubles_up_to_the_cap_and_reset_starts_over) {
  backoff b(milliseconds(1), milliseconds(5));
  std::stop_source never;
  EXPECT_EQ(b.next(), milliseconds(1));
  EXPECT_EQ(b.failing_for(), milliseconds(0));
  ASSERT_TRUE(b.wait(never.get_token()));
  EXPECT_EQ(b.next(), milliseconds(2));
  ASSERT_TRUE(b.wait(never.get_token()));
  EXPECT_EQ(b.next(), milliseconds(4));
  ASSERT_TRUE(b.wait(never.get_token()));
  EXPECT_EQ(b.next(), milliseconds(5));
  ASSERT_TRUE(b.wait(never.get_token()));
  EXPECT_EQ(b.next(), milliseconds(5));
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(1));
  EXPECT_EQ(b.failing_for(), milliseconds(0));
}

TEST(backoff_test, a_stop_ends_the_wait_and_says_so) {
  backoff b(std::chrono::hours(1), std::chrono::hours(2));
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(b.wait(stop.get_token()));  // at once, not in an hour
}

}  // namespace
}  // namespace denormd
