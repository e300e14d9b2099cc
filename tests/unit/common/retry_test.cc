#include "common/retry.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "common/expected.h"

namespace denormd {
namespace {

using std::chrono::milliseconds;

// An attempt that fails `failures` times, then succeeds with the number of attempts made.
struct flaky {
  int failures;
  int calls = 0;
  expected<int> operator()() {
    ++calls;
    if (calls <= failures) return fail("not yet", calls);
    return calls;
  }
};

TEST(retry_test, retries_until_the_attempt_succeeds_and_returns_its_value) {
  backoff wait(milliseconds(1), milliseconds(2));
  flaky attempt{3};
  std::vector<int> told;
  auto r = retry_with_backoff(std::stop_source().get_token(), wait, std::ref(attempt),
                              [&](const error& e, const retry_state& s) {
                                EXPECT_EQ(e.code, s.attempt);
                                told.push_back(s.attempt);
                                return retry_verdict::retry;
                              });
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(*r);
  EXPECT_EQ(**r, 4);
  EXPECT_EQ(told, (std::vector<int>{1, 2, 3}));
}

TEST(retry_test, the_back_off_grows_and_caps_and_each_failure_is_told_the_wait_to_come) {
  backoff wait(milliseconds(1), milliseconds(4));
  flaky attempt{5};
  std::vector<std::int64_t> retry_in;
  auto r = retry_with_backoff(std::stop_source().get_token(), wait, std::ref(attempt),
                              [&](const error&, const retry_state& s) {
                                retry_in.push_back(s.retry_in.count());
                                return retry_verdict::retry;
                              });
  ASSERT_TRUE(r && *r);
  EXPECT_EQ(retry_in, (std::vector<std::int64_t>{1, 2, 4, 4, 4}));
}

TEST(retry_test, give_up_returns_the_failure_without_waiting_or_trying_again) {
  backoff wait(std::chrono::hours(1), std::chrono::hours(2));
  flaky attempt{10};
  const auto began = std::chrono::steady_clock::now();
  auto r =
      retry_with_backoff(std::stop_source().get_token(), wait, std::ref(attempt),
                         [](const error&, const retry_state&) { return retry_verdict::give_up; });
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(*r);
  EXPECT_EQ(r->error().message, "not yet");
  EXPECT_EQ(attempt.calls, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::minutes(1));
  EXPECT_EQ(wait.next(), std::chrono::hours(1));  // no wait drawn
}

TEST(retry_test, retry_now_tries_again_without_a_wait) {
  backoff wait(std::chrono::hours(1), std::chrono::hours(2));
  flaky attempt{2};
  auto r =
      retry_with_backoff(std::stop_source().get_token(), wait, std::ref(attempt),
                         [](const error&, const retry_state&) { return retry_verdict::retry_now; });
  ASSERT_TRUE(r && *r);
  EXPECT_EQ(**r, 3);
  EXPECT_EQ(wait.next(), std::chrono::hours(1));
}

TEST(retry_test, a_stop_during_the_wait_returns_promptly_with_nothing) {
  backoff wait(std::chrono::hours(1), std::chrono::hours(2));
  flaky attempt{10};
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stop.request_stop();
  });
  const auto began = std::chrono::steady_clock::now();
  auto r =
      retry_with_backoff(stop.get_token(), wait, std::ref(attempt),
                         [](const error&, const retry_state&) { return retry_verdict::retry; });
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(attempt.calls, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30));
}

TEST(retry_test, the_first_attempt_runs_even_when_stopped_already) {
  backoff wait(milliseconds(1), milliseconds(2));
  flaky attempt{0};
  std::stop_source stop;
  stop.request_stop();
  auto r =
      retry_with_backoff(stop.get_token(), wait, std::ref(attempt),
                         [](const error&, const retry_state&) { return retry_verdict::retry; });
  ASSERT_TRUE(r && *r);
  EXPECT_EQ(attempt.calls, 1);
}

}  // namespace
}  // namespace denormd
