// Reload requests: every request waiting when the main thread looks is answered by one reload;
// a stop ends the wait; once closed, what waits and what comes later is refused.
#include "app/reload_requests.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace denormd::app {
namespace {

TEST(reload_requests_test, the_requests_waiting_are_answered_by_one_reload) {
  reload_requests r;
  std::vector<std::string> answers;
  r.post([&](http::reload_outcome o) { answers.push_back("a " + std::to_string(o.ok)); });
  r.post({});  // SIGHUP: nobody waits for the answer
  r.post([&](http::reload_outcome o) { answers.push_back("b " + std::to_string(o.ok)); });
  std::stop_source stop;
  std::vector<reload_requests::answer> taken;
  ASSERT_TRUE(r.take(stop.get_token(), taken));
  EXPECT_EQ(taken.size(), 2u);
  answer_all(taken, {true, ""});
  EXPECT_EQ(answers, (std::vector<std::string>{"a 1", "b 1"}));
  EXPECT_TRUE(taken.empty());

  // Nothing more was asked: the next take waits until a request or a stop.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r.post({});
  });
  ASSERT_TRUE(r.take(stop.get_token(), taken));
  EXPECT_TRUE(taken.empty());  // asked, without anyone to answer
  later.join();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop.request_stop();
  });
  EXPECT_FALSE(r.take(stop.get_token(), taken));
  stopper.join();
}

TEST(reload_requests_test, once_closed_waiting_and_later_requests_are_refused) {
  reload_requests r;
  std::vector<std::string> answers;
  auto record = [&](http::reload_outcome o) { answers.push_back(o.ok ? "ok" : o.message); };
  r.post(record);
  r.close();
  r.post(record);
  EXPECT_EQ(answers, (std::vector<std::string>{"denormd is stopping", "denormd is stopping"}));
  std::stop_source stop;
  std::vector<reload_requests::answer> taken;
  EXPECT_FALSE(r.take(stop.get_token(), taken));
}

}  // namespace
}  // namespace denormd::app
