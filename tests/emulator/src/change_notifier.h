#pragma once
// Wakes await-data getMores when new changes are recorded. A waiter parks an Asio timer set to
// its deadline; notify() cancels every parked timer on the timer's own executor, so waiting
// never holds the storage lock or a thread. Thread-safe.

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace mongo_emulator {

class change_notifier {
 public:
  using timer_ptr = std::shared_ptr<boost::asio::steady_timer>;

  // Parks `timer` until the next notify. If changes past `seen` were already announced, the
  // timer is cancelled right away (no lost wake-up between checking and parking).
  void park(const timer_ptr& timer, std::uint64_t seen);
  // Announces that the change count reached `count`.
  void notify(std::uint64_t count);

 private:
  std::mutex mutex_;
  std::uint64_t announced_ = 0;
  std::vector<std::weak_ptr<boost::asio::steady_timer>> parked_;
};

}  // namespace mongo_emulator
