#pragma once
// Capped exponential backoff with jitter: the one retry wait of every loop that retries a
// failure (a watcher reopening its stream or re-syncing, an applier retrying a batch, the
// daemon reading a checkpoint, backfill). Each wait is a random part of the
// current delay, so many clients do not retry in lock step, and ends early on a stop request.
// One instance per retry loop; not shared between threads.

#include <chrono>
#include <optional>
#include <random>
#include <stop_token>

namespace denormd {

class backoff {
 public:
  explicit backoff(std::chrono::milliseconds first = std::chrono::milliseconds(100),
                   std::chrono::milliseconds cap = std::chrono::milliseconds(10000));

  // Sleeps for the next delay (a random part of it, so that many clients do not retry in
  // lock step); false when `stop` was requested meanwhile.
  bool wait(std::stop_token stop);
  // After progress: the next failure starts again from the first delay.
  void reset();
  // How long the failures since the last reset() have lasted.
  std::chrono::milliseconds failing_for() const;
  // The delay the next wait() draws from (its upper bound).
  std::chrono::milliseconds next() const { return next_; }

 private:
  std::chrono::milliseconds first_;
  std::chrono::milliseconds cap_;
  std::chrono::milliseconds next_;
  std::chrono::steady_clock::time_point since_{};
  // Seeded at the first wait: most retry loops never wait, and seeding costs a system call
  // (a batch's writes construct one).
  std::optional<std::minstd_rand> rng_;
};

}  // namespace denormd
