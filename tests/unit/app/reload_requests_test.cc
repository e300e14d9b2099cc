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
  r.post([&](reload_outcome o) { answers.push_back("a " + std::to_string(o.ok)); });
  r.post({});  // SIGHUP: nobody waits for the answer
  r.post([&](reload_outcome o) { answers.push_back("b " + std::to_string(o.ok)); });
  std::stop_source stop;
  std::vector<reload_requests::answer> taken;
  std::vector<std::function<void()>> tasks;
  bool reload = false;
  ASSERT_TRUE(r.take(stop.get_token(), reload, taken, tasks));
  EXPECT_TRUE(reload);
  EXPECT_TRUE(tasks.empty());
  EXPECT_EQ(taken.size(), 2u);
  answer_all(taken, {true, ""});
  EXPECT_EQ(answers, (std::vector<std::string>{"a 1", "b 1"}));
  EXPECT_TRUE(taken.empty());

  // Nothing more was asked: the next take waits until a request or a stop.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r.post({});
  });
  ASSERT_TRUE(r.take(stop.get_token(), reload, taken, tasks));
  EXPECT_TRUE(reload);
  EXPECT_TRUE(taken.empty());  // asked, without anyone to answer
  later.join();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop.request_stop();
  });
  EXPECT_FALSE(r.take(stop.get_token(), reload, taken, tasks));
  stopper.join();
}

TEST(reload_requests_test, tasks_wake_the_main_thread_in_order_without_a_reload) {
  reload_requests r;
  std::vector<int> ran;
  std::thread poster([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r.post_task([&] { ran.push_back(1); });
    r.post_task([&] { ran.push_back(2); });
  });
  std::stop_source stop;
  std::vector<reload_requests::answer> taken;
  std::vector<std::function<void()>> tasks;
  bool reload = true;
  std::size_t total = 0;
  while (total < 2) {
    ASSERT_TRUE(r.take(stop.get_token(), reload, taken, tasks));
    EXPECT_FALSE(reload);
    for (auto& t : tasks)
      t();
    total += tasks.size();
  }
  poster.join();
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  // Once closed, tasks are dropped.
  r.close();
  r.post_task([&] { ran.push_back(3); });
  EXPECT_FALSE(r.take(stop.get_token(), reload, taken, tasks));
  EXPECT_EQ(ran.size(), 2u);
}

TEST(reload_requests_test, once_closed_waiting_and_later_requests_are_refused) {
  reload_requests r;
  std::vector<std::string> answers;
  auto record = [&](reload_outcome o) { answers.push_back(o.ok ? "ok" : o.message); };
  r.post(record);
  r.close();
  r.post(record);
  EXPECT_EQ(answers, (std::vector<std::string>{"denormd is stopping", "denormd is stopping"}));
  std::stop_source stop;
  std::vector<reload_requests::answer> taken;
  std::vector<std::function<void()>> tasks;
  bool reload = false;
  EXPECT_FALSE(r.take(stop.get_token(), reload, taken, tasks));
}

}  // namespace
}  // namespace denormd::app
