#include "common/backoff.h"

#include "common/clock.h"

namespace denormd {

backoff::backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap)
    : first_(first), cap_(cap), next_(first) {}

bool backoff::wait(std::stop_token stop) {
  const auto now = std::chrono::steady_clock::now();
  if (since_ == std::chrono::steady_clock::time_point{}) since_ = now;
  if (!rng_) rng_.emplace(std::random_device{}());
  const std::chrono::milliseconds delay(
      std::uniform_int_distribution<std::int64_t>(next_.count() / 2, next_.count())(*rng_));
  next_ = std::min(next_ * 2, cap_);
  return sleep_unless_stopped(stop, delay);
}

void backoff::reset() {
  next_ = first_;
  since_ = {};
}

std::chrono::milliseconds backoff::failing_for() const {
  if (since_ == std::chrono::steady_clock::time_point{}) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since_);
}

}  // namespace denormd
