#include "member_state.h"

namespace mongo_emulator {

bool member_state::step_down(clock::duration period) {
  clock::rep until = secondary_until_.load();
  const clock::rep now = clock::now().time_since_epoch().count();
  // Two concurrent step-downs: one wins, the other finds the node secondary, as on MongoDB.
  do {
    if (now < until) return false;
  } while (!secondary_until_.compare_exchange_weak(until, now + period.count()));
  ++step_downs_;
  return true;
}

bool member_state::primary() const {
  return clock::now().time_since_epoch().count() >= secondary_until_.load();
}

}  // namespace mongo_emulator
