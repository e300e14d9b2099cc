#include "app/reload_requests.h"

namespace denormd::app {

namespace {

const reload_outcome stopping{false, "denormd is stopping"};

}  // namespace

void reload_requests::post(answer done) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      if (done) waiting_.push_back(std::move(done));
      asked_ = true;
      changed_.notify_all();
      return;
    }
  }
  if (done) done(stopping);
}

void reload_requests::post_task(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  tasks_.push_back(std::move(task));
  changed_.notify_all();
}

bool reload_requests::take(std::stop_token stop, bool& reload, std::vector<answer>& out,
                           std::vector<std::function<void()>>& tasks) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait(lock, stop, [&] { return asked_ || !tasks_.empty() || closed_; }) || closed_)
    return false;
  reload = asked_;
  asked_ = false;
  out = std::move(waiting_);
  waiting_.clear();
  tasks = std::move(tasks_);
  tasks_.clear();
  return true;
}

void reload_requests::close() {
  std::vector<answer> refused;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    refused = std::move(waiting_);
    waiting_.clear();
    tasks_.clear();
  }
  answer_all(refused, stopping);
}

void answer_all(std::vector<reload_requests::answer>& to, const reload_outcome& outcome) {
  for (auto& done : to)
    done(outcome);
  to.clear();
}

}  // namespace denormd::app
