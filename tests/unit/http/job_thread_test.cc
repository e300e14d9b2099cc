#include "http/job_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace denormd::http {
namespace {

using namespace std::chrono_literals;

TEST(job_thread, runs_the_jobs_in_order_on_another_thread) {
  job_thread jobs;
  std::mutex m;
  std::vector<int> ran;
  std::promise<std::thread::id> where;
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(jobs.post([&, i] {
      std::lock_guard lock(m);
      ran.push_back(i);
    }));
  ASSERT_TRUE(jobs.post([&] { where.set_value(std::this_thread::get_id()); }));
  auto id = where.get_future();
  ASSERT_EQ(id.wait_for(5s), std::future_status::ready);
  EXPECT_NE(id.get(), std::this_thread::get_id());
  std::lock_guard lock(m);
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(job_thread, stop_waits_for_the_running_job_and_drops_the_rest) {
  job_thread jobs;
  std::promise<void> started;
  std::atomic<bool> finished{false};
  std::atomic<int> later{0};
  jobs.post([&] {
    started.set_value();
    std::this_thread::sleep_for(200ms);
    finished = true;
  });
  for (int i = 0; i < 3; ++i)
    jobs.post([&] { ++later; });
  started.get_future().wait();
  jobs.stop();
  EXPECT_TRUE(finished);  // stop() returned after the running job
  EXPECT_EQ(later, 0);
  EXPECT_FALSE(jobs.post([&] { ++later; }));
  jobs.stop();  // idempotent
  EXPECT_EQ(later, 0);
}

TEST(job_thread, a_job_may_drop_the_last_reference_to_its_own_thread) {
  auto jobs = std::make_shared<job_thread>();
  auto holder = std::make_shared<std::shared_ptr<job_thread>>(jobs);
  std::promise<void> released;
  std::promise<void> done;
  jobs->post([holder, go = released.get_future().share(), &done] {
    go.wait();
    holder->reset();  // the last reference: the thread is destroyed on itself
    done.set_value();
  });
  jobs.reset();
  released.set_value();
  EXPECT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
}

}  // namespace
}  // namespace denormd::http
