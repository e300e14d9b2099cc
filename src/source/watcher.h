#pragma once
// One change-stream reader per source namespace, on its own thread: opens the stream at the
// stored position, hands every event to its queue in stream order, turns idle periods into
// token-only items (so checkpoints keep up with a quiet source), and reopens after transient
// errors from the last token it handed over. Lost history is re-synced through the resync
// hook (then streaming goes on from the time taken before it); invalidation (drop, rename)
// and stop end the thread and leave the watcher not ready, with the reason in state().
// Lifecycle: start() once, request_stop() then join(). Thread-safe accessors.

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "source/event_queue.h"

namespace denormd::source {

struct watcher_options {
  mapping::ns source;
  std::optional<bson::document> resume_after;  // the stored checkpoint or --resume-after
  std::optional<bson::timestamp> start_at;     // --start-at (when there is no token)
  std::int32_t max_await_ms = 1000;
  std::chrono::milliseconds max_backoff{10000};
  // When history is lost: brings the affected copies in line and returns the operation time
  // taken before it started, from which the stream then resumes. Without it the watcher
  // stops, not ready.
  std::function<mongo::result<bson::timestamp>(std::stop_token)> resync;
};

class watcher {
 public:
  enum class stop_reason { none, requested, history_lost, invalidated };

  watcher(mongo::connection& conn, watcher_options opts, event_queue& queue, metrics::metrics& m);
  ~watcher();
  watcher(const watcher&) = delete;
  watcher& operator=(const watcher&) = delete;

  void start();
  void request_stop();
  void join();

  const mapping::ns& source() const { return opts_.source; }
  bool ready() const { return ready_.load(); }
  std::string state() const;
  stop_reason reason() const { return reason_.load(); }
  // Items handed to the queue so far.
  std::uint64_t pushed() const { return pushed_.load(); }

 private:
  void run(std::stop_token stop);
  // Handles lost history: re-sync (retrying) and return where to stream from, or nullopt
  // when the watcher has to stop.
  std::optional<bson::timestamp> recover(std::stop_token& stop, const mongo::driver_error& e);
  void set_state(bool ready, std::string state);
  // Sleeps for the backoff unless stop comes first; doubles the backoff (capped).
  bool back_off(std::stop_token& stop, std::chrono::milliseconds& backoff);

  mongo::connection& conn_;
  watcher_options opts_;
  event_queue& queue_;
  metrics::metrics& metrics_;
  const std::string name_;  // "db.coll", the metrics label
  std::atomic<bool> ready_{false};
  std::atomic<stop_reason> reason_{stop_reason::none};
  std::atomic<std::uint64_t> pushed_{0};
  mutable std::mutex state_mutex_;
  std::string state_ = "starting";
  std::jthread thread_;
};

}  // namespace denormd::source
