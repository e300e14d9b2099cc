#pragma once
// The replica-set role of this one-node set: primary, or secondary for the window a forced
// replSetStepDown asked for (then primary again, as a single-node set re-elects itself when its
// step-down period ends). Lifecycle: one per server. Thread-safe (atomics).

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mongo_emulator {

class member_state {
 public:
  using clock = std::chrono::steady_clock;

  // Becomes secondary for `period`; false (nothing changes) when not primary now.
  bool step_down(clock::duration period);
  bool primary() const;
  // How many step-downs there were: an operation that began under another count was running
  // when the node stepped down (MongoDB kills those that write).
  std::uint64_t step_downs() const { return step_downs_.load(); }
  // When the last step-down window ends (or ended): the node's last election, for
  // replSetGetStatus. The clock's epoch when it never stepped down.
  clock::time_point secondary_until() const {
    return clock::time_point(clock::duration(secondary_until_.load()));
  }

 private:
  std::atomic<clock::rep> secondary_until_{0};  // clock ticks; primary from then on
  std::atomic<std::uint64_t> step_downs_{0};
};

}  // namespace mongo_emulator
