#include "app/status_api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace denormd::app {
namespace {

using namespace std::chrono_literals;

// A reply whose answer a test can wait for (the status thread sends it).
class waited_reply final : public http::reply {
 public:
  void send(http::response r) override {
    std::lock_guard lock(mutex_);
    if (!answer_) answer_ = std::move(r);
    cv_.notify_all();
  }
  void after(std::chrono::milliseconds, std::function<void()>) override {}
  http::response wait() {
    std::unique_lock lock(mutex_);
    EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return answer_.has_value(); }));
    return answer_.value_or(http::response{0, "", ""});
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<http::response> answer_;
};

TEST(status_api_test, answers_json_and_reads_once_for_requests_that_arrive_together) {
  std::atomic<int> reads{0};
  status_api api(
      [&]() -> expected<std::string> {
        ++reads;
        std::this_thread::sleep_for(50ms);  // a reading takes round trips
        return std::string("{\"n\":") + std::to_string(reads.load()) + "}";
      },
      200ms);
  auto first = std::make_shared<waited_reply>();
  api.ask(first);
  EXPECT_EQ(first->wait().body, "{\"n\":1}");
  // Within the interval, several requests wait for one next reading and share it.
  std::vector<std::shared_ptr<waited_reply>> many;
  for (int i = 0; i < 5; ++i) {
    many.push_back(std::make_shared<waited_reply>());
    api.ask(many.back());
  }
  for (auto& r : many) {
    const auto answer = r->wait();
    EXPECT_EQ(answer.status, 200u);
    EXPECT_EQ(answer.content_type, "application/json");
    EXPECT_EQ(answer.body, "{\"n\":2}");
  }
  EXPECT_EQ(reads.load(), 2);
}

TEST(status_api_test, a_reading_that_fails_is_503_with_why) {
  status_api api([]() -> expected<std::string> { return fail("the server is away"); });
  auto r = std::make_shared<waited_reply>();
  api.ask(r);
  const auto answer = r->wait();
  EXPECT_EQ(answer.status, 503u);
  EXPECT_NE(answer.body.find("the server is away"), std::string::npos);
}

TEST(status_api_test, stopping_answers_whoever_still_waits) {
  auto r = std::make_shared<waited_reply>();
  {
    status_api api(
        []() -> expected<std::string> {
          std::this_thread::sleep_for(100ms);
          return std::string("{}");
        },
        10s);
    auto first = std::make_shared<waited_reply>();
    api.ask(first);
    first->wait();
    api.ask(r);  // waits for the interval, which outlasts the api
  }
  EXPECT_EQ(r->wait().status, 503u);
}

}  // namespace
}  // namespace denormd::app
