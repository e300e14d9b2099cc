#include "source/event_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace denormd::source {
namespace {

stream_item item(std::size_t bytes, std::int64_t ms = 1) {
  return stream_item{std::vector<std::uint8_t>(bytes, 1), bson::document{{"_data", "x"}}, ms};
}

TEST(event_queue_test, hands_over_in_order_in_batches) {
  event_queue q(10, 1 << 20);
  for (int i = 1; i <= 5; ++i)
    ASSERT_TRUE(q.push(item(10, i)));
  auto first = q.pop_batch(3, std::chrono::milliseconds(0));
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].event_ms, 1);
  EXPECT_EQ(first[2].event_ms, 3);
  EXPECT_EQ(q.oldest_event_ms(), 4);
  EXPECT_EQ(q.pop_batch(10, std::chrono::milliseconds(0)).size(), 2u);
  EXPECT_TRUE(q.pop_batch(10, std::chrono::milliseconds(10)).empty());
}

TEST(event_queue_test, token_only_items_do_not_count_as_oldest_events) {
  event_queue q(10, 1 << 20);
  q.push(stream_item{{}, bson::document{{"_data", "a"}}, 0});
  EXPECT_FALSE(q.oldest_event_ms().has_value());
  q.push(item(5, 42));
  EXPECT_EQ(q.oldest_event_ms(), 42);
}

TEST(event_queue_test, push_blocks_when_full_by_count_and_by_bytes) {
  for (const bool by_bytes : {false, true}) {
    event_queue q(by_bytes ? 1000 : 2, by_bytes ? 400 : 1 << 20);  // an item costs 164
    ASSERT_TRUE(q.push(item(100)));
    ASSERT_TRUE(q.push(item(100)));
    std::atomic<bool> pushed{false};
    std::thread producer([&] {
      q.push(item(100));
      pushed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(pushed.load()) << (by_bytes ? "bytes" : "count");
    EXPECT_EQ(q.pop_batch(1, std::chrono::milliseconds(0)).size(), 1u);
    producer.join();
    EXPECT_TRUE(pushed.load());
    EXPECT_EQ(q.size(), 2u);
  }
}

// A stopping watcher must not wait on a consumer that does not drain (an applier past its lease
// deadline writes nothing until it is stopped, and it is stopped after its watcher): a push
// blocked on a full queue gives up when its stop is requested, and the item is not queued.
TEST(event_queue_test, a_push_blocked_on_a_full_queue_gives_up_when_stopped) {
  event_queue q(1, 1 << 20);
  ASSERT_TRUE(q.push(item(10)));
  std::stop_source stop;
  std::atomic<int> result{-1};
  std::thread producer([&] { result = q.push(item(10), stop.get_token()) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(result.load(), -1);  // still blocked
  stop.request_stop();
  producer.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_FALSE(q.push(item(10), stop.get_token()));  // stopped and full: at once
}

TEST(event_queue_test, an_item_larger_than_the_budget_still_passes_alone) {
  event_queue q(10, 100);
  ASSERT_TRUE(q.push(item(1000)));
  EXPECT_EQ(q.pop_batch(10, std::chrono::milliseconds(0)).size(), 1u);
}

TEST(event_queue_test, close_wakes_a_blocked_producer_and_a_waiting_consumer) {
  event_queue q(1, 1 << 20);
  ASSERT_TRUE(q.push(item(1)));
  std::thread producer([&] { EXPECT_FALSE(q.push(item(1))); });
  std::thread consumer([&] {
    event_queue empty(1, 1);
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      empty.close();
    });
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(empty.pop_batch(1, std::chrono::seconds(10)).empty());
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    closer.join();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.close();
  producer.join();
  consumer.join();
  EXPECT_TRUE(q.closed());
  EXPECT_EQ(q.pop_batch(10, std::chrono::milliseconds(0)).size(), 1u);  // drains what is left
}

}  // namespace
}  // namespace denormd::source
