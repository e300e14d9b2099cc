#include "change_notifier.h"

#include <boost/asio/post.hpp>

namespace mongo_emulator {

namespace {

void wake(const change_notifier::timer_ptr& timer) {
  boost::asio::post(timer->get_executor(), [timer] { timer->cancel(); });
}

}  // namespace

void change_notifier::park(const timer_ptr& timer, std::uint64_t seen) {
  std::unique_lock lock(mutex_);
  if (announced_ > seen) {
    lock.unlock();
    wake(timer);
    return;
  }
  // Drop entries of waiters that are gone, so the list stays bounded by live waiters.
  std::erase_if(parked_, [](const auto& w) { return w.expired(); });
  parked_.push_back(timer);
}

void change_notifier::notify(std::uint64_t count) {
  std::vector<std::weak_ptr<boost::asio::steady_timer>> parked;
  {
    std::lock_guard lock(mutex_);
    if (count > announced_) announced_ = count;
    parked.swap(parked_);
  }
  for (const auto& w : parked) {
    if (auto timer = w.lock()) wake(timer);
  }
}

}  // namespace mongo_emulator
