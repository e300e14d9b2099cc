#include "http/job_thread.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

namespace denormd::http {

struct job_thread::shared {
  std::mutex mutex;  // guards the members below
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool stopped = false;
};

job_thread::job_thread() : shared_(std::make_shared<shared>()) {
  thread_ = std::thread([s = shared_] {
    std::unique_lock lock(s->mutex);
    while (true) {
      s->wake.wait(lock, [&] { return s->stopped || !s->jobs.empty(); });
      if (s->stopped) break;
      auto job = std::move(s->jobs.front());
      s->jobs.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // what it holds goes here, outside the lock
      lock.lock();
    }
    // Dropped outside the lock: a job may hold what stops this thread.
    auto dropped = std::move(s->jobs);
    lock.unlock();
  });
}

job_thread::~job_thread() {
  stop();
}

bool job_thread::post(std::function<void()> job) {
  {
    std::lock_guard lock(shared_->mutex);
    if (shared_->stopped) return false;
    shared_->jobs.push_back(std::move(job));
  }
  shared_->wake.notify_one();
  return true;
}

void job_thread::stop() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopped = true;
  }
  shared_->wake.notify_one();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

}  // namespace denormd::http
