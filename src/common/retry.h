#pragma once
// The one retry loop (what redpanda's retry_with_backoff is to its code): every loop that
// retries a failure (an applier batch, a checkpoint read, a re-sync, a backfill, a stream
// reopen) runs through it, so that each stops promptly, backs off the same way and leaves the
// counting and logging of its failures to the caller, who knows their words.

#include <chrono>
#include <optional>
#include <stop_token>
#include <type_traits>

#include "common/backoff.h"

namespace denormd {

// What the loop does after a failed attempt.
enum class retry_verdict {
  retry,      // wait for the next back-off, then try again
  retry_now,  // try again at once: the failure handler has recovered (or waited) itself
  give_up,    // return the failure
};

// What the failure handler learns beside the error.
struct retry_state {
  int attempt = 1;                        // the failed attempt's number, from 1
  std::chrono::milliseconds retry_in{0};  // the upper bound of the wait that follows a retry
};

// Runs `attempt` (returning an expected-like value) until it succeeds. After each failure
// `on_failure(error, retry_state)` counts and logs it and returns the verdict; a retry waits on
// `wait`, which ends early when `stop` is requested. Returns the successful value, the failure
// given up on, or nullopt when stopped during a wait. The first attempt runs even when `stop`
// was requested already (a caller that must not try then checks first). `wait` is the caller's:
// it may reset it after progress, or keep it across calls so that delays go on growing.
template <class Attempt, class OnFailure>
auto retry_with_backoff(std::stop_token stop, backoff& wait, Attempt&& attempt,
                        OnFailure&& on_failure) -> std::optional<std::invoke_result_t<Attempt&>> {
  for (int n = 1;; ++n) {
    auto r = attempt();
    if (r) return r;
    switch (on_failure(r.error(), retry_state{n, wait.next()})) {
      case retry_verdict::give_up:
        return r;
      case retry_verdict::retry_now:
        break;
      case retry_verdict::retry:
        if (!wait.wait(stop)) return std::nullopt;
        break;
    }
  }
}

}  // namespace denormd
