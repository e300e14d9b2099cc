#include "app/status_api.h"

namespace denormd::app {

status_api::status_api(reader read, std::chrono::milliseconds min_interval)
    : read_(std::move(read)), min_interval_(min_interval) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

status_api::~status_api() {
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& to : waiting_)
    to->send({503, "text/plain; charset=utf-8", "stopping\n"});
}

void status_api::ask(std::shared_ptr<http::reply> to) {
  {
    std::lock_guard lock(mutex_);
    waiting_.push_back(std::move(to));
  }
  wake_.notify_all();
}

void status_api::run(std::stop_token stop) {
  std::optional<std::chrono::steady_clock::time_point> last;
  while (!stop.stop_requested()) {
    std::vector<std::shared_ptr<http::reply>> now;
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [&] { return !waiting_.empty(); })) return;
    }
    // Requests that arrive within min_interval of the last reading wait for the next one, and
    // share it.
    if (last) {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, stop, *last + min_interval_, [] { return false; });  // a pause
      if (stop.stop_requested()) return;
    }
    {
      std::lock_guard lock(mutex_);
      now.swap(waiting_);
    }
    last = std::chrono::steady_clock::now();
    auto text = read_();
    for (auto& to : now) {
      if (text) {
        to->send({200, "application/json", *text});
      } else {
        to->send({503, "text/plain; charset=utf-8",
                  "the status could not be read: " + text.error().message + "\n"});
      }
    }
  }
}

}  // namespace denormd::app
