#include "change_notifier.h"

#include <algorithm>
#include <boost/asio/post.hpp>

namespace mongo_emulator {

namespace {

void wake(const change_notifier::timer_ptr& timer) {
  boost::asio::post(timer->get_executor(), [timer] { timer->cancel(); });
}

}  // namespace

void change_notifier::park(const timer_ptr& timer, std::uint64_t seen, watch_scope scope) {
  std::unique_lock lock(mutex_);
  if (announced_ > seen) {
    lock.unlock();
    wake(timer);
    return;
  }
  // Drop entries of waiters that are gone, so the list stays bounded by live waiters.
  std::erase_if(parked_, [](const waiter& w) { return w.timer.expired(); });
  parked_.push_back({timer, std::move(scope)});
}

void change_notifier::notify(std::uint64_t count, const changed_namespaces& changed) {
  std::vector<timer_ptr> to_wake;
  {
    std::lock_guard lock(mutex_);
    if (count > announced_) announced_ = count;
    std::erase_if(parked_, [&](const waiter& w) {
      auto timer = w.timer.lock();
      if (timer == nullptr) return true;
      const bool sees =
          changed.everything ||
          std::any_of(changed.namespaces.begin(), changed.namespaces.end(),
                      [&](const auto& ns) { return w.scope.sees(ns.first, ns.second); });
      if (sees) to_wake.push_back(std::move(timer));
      return sees;
    });
  }
  for (const auto& timer : to_wake)
    wake(timer);
}

}  // namespace mongo_emulator
