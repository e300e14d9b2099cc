#pragma once
// The consumer side of one source: takes whatever its watcher queued (up to a batch), plans
// it, coalesces, writes, and only then may store the checkpoint of the last item. A failed
// batch is retried whole (ops are idempotent) with capped exponential backoff and jitter,
// so position is never lost. Lifecycle: start() once; request_stop() lets the batch in
// flight finish (and checkpoint) and ends the thread; join(). Accessors are thread-safe.

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "checkpoint/checkpoint_store.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "sink/writer.h"
#include "source/event_queue.h"

namespace denormd::sink {

struct applier_options {
  mapping::ns source;
  std::size_t max_batch = 1000;
  bool dry_run = false;  // plan and log, write nothing, store no checkpoint
  std::chrono::milliseconds max_backoff{10000};
  std::int64_t initial_checkpoint_ms = 0;  // when the stored checkpoint was saved
  // A batch smaller than max_batch waits this long for more events: fewer, larger writes
  // (and more coalescing) for a few milliseconds of latency. 0 writes at once.
  std::chrono::milliseconds linger{5};
  // The token of applied work is stored at most this often, and whenever the queue runs dry
  // or the applier stops. A crash replays at most this much, which is safe (ops are
  // idempotent) and spares one write command per batch. 0 stores after every batch.
  std::chrono::milliseconds checkpoint_interval{1000};
};

class applier {
 public:
  applier(const mapping::planner& planner, writer& w, checkpoint::checkpoint_store& checkpoints,
          source::event_queue& queue, metrics::metrics& m, applier_options opts);
  ~applier();
  applier(const applier&) = delete;
  applier& operator=(const applier&) = delete;

  void start();
  void request_stop();
  void join();

  // Seconds between now and the wall time of the oldest event not yet applied (0 when
  // caught up); and since the last stored checkpoint.
  double lag_seconds(std::int64_t now_ms) const;
  double checkpoint_age_seconds(std::int64_t now_ms) const;
  std::uint64_t applied_events() const { return applied_.load(); }
  // Queue items (events and token-only ones) fully applied and checkpointed so far; equal to
  // the watcher's pushed() count when everything read is applied.
  std::uint64_t completed_items() const { return completed_items_.load(); }

 private:
  void run(std::stop_token stop);
  // Retries `attempt` until it succeeds or stop is requested (then false).
  template <class F>
  bool with_retry(std::stop_token& stop, const char* stage, F&& attempt);
  // Stores `pending_` (retrying until stored or stopped); false when stopped first.
  bool store_pending(std::stop_token& stop);

  const mapping::planner& planner_;
  writer& writer_;
  checkpoint::checkpoint_store& checkpoints_;
  source::event_queue& queue_;
  metrics::metrics& metrics_;
  applier_options opts_;
  const std::string name_;
  std::optional<checkpoint::checkpoint> pending_;  // applied, not yet stored (applier thread)
  std::chrono::steady_clock::time_point stored_at_{};
  std::atomic<std::int64_t> in_flight_oldest_ms_{0};
  std::atomic<std::int64_t> checkpoint_ms_{0};
  std::atomic<std::uint64_t> applied_{0};
  std::atomic<std::uint64_t> completed_items_{0};
  std::jthread thread_;
};

}  // namespace denormd::sink
