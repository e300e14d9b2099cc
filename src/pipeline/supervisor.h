#pragma once
// Owns the running pipelines, one per watched namespace, and can start, stop and replace one
// while the others run; each pipeline plans with the planner snapshot it was started with, so
// a replacement with a new snapshot never changes one under a running batch. Once a second,
// on a thread of its own, it sets every pipeline's lag and checkpoint-age gauges.
//
// Lifecycle: start() pipelines; stop()/replace() any one; stop_all() stops them all in the
// daemon's shutdown order (the pipelines stay listed, stopped, so status() still says why
// they are not ready); the destructor stops whatever still runs. Thread-safety: start(),
// stop(), replace() and stop_all() from one controlling thread; status() from any thread
// (the readiness probe's).

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "pipeline/pipeline.h"

namespace denormd::pipeline {

struct pipeline_status {
  bool ready = false;
  std::string state;
  double lag_seconds = 0;
  double checkpoint_age_seconds = 0;
  std::uint64_t applied_events = 0;
  std::optional<bson::timestamp> applied_through{};
  std::int64_t last_event_ms = 0;
  double events_per_second = 0;  // applied, over the last rate_window
  std::uint64_t errors = 0;
};

// Events per second are measured over this much of the recent past.
inline constexpr std::chrono::seconds rate_window{10};

// One sample of a namespace's lag: when (ms since the epoch) and how many seconds.
struct lag_sample {
  std::int64_t at_ms = 0;
  double lag_seconds = 0;
};

// The lag of each namespace is sampled this often and kept this long (the operator's page
// draws it; nothing is stored).
inline constexpr std::chrono::seconds lag_sample_interval{5};
inline constexpr std::size_t lag_samples_kept = 180;  // 15 minutes

class supervisor {
 public:
  supervisor(parts_factory& parts, metrics::metrics& m, pipeline_options opts);
  ~supervisor();
  supervisor(const supervisor&) = delete;
  supervisor& operator=(const supervisor&) = delete;

  // Starts the pipeline of `source` from `from`, planning with `planner`. None may be listed
  // for `source` (a programmer error).
  void start(const mapping::ns& source, std::shared_ptr<const mapping::planner> planner,
             start_position from);
  // Stops the pipeline of `source` (its source stops reading, its applier finishes the batch
  // in flight and stores the checkpoint) and removes it. Returns the events it applied; 0
  // when none is listed.
  std::uint64_t stop(const mapping::ns& source);
  // Stops the pipeline of `source` as stop() does and returns where one taking over starts:
  // after the last item it applied. nullopt when none is listed.
  std::optional<start_position> hand_over(const mapping::ns& source);
  // Stops the pipeline of `source` and starts one planning with `planner` where it stopped.
  // False when none is listed.
  bool replace(const mapping::ns& source, std::shared_ptr<const mapping::planner> planner);
  // Stops every pipeline, the last started first: every source stops and is joined before
  // any queue closes, so an applier stopping on an empty queue stores the newest position.
  // Returns the events applied by them all.
  std::uint64_t stop_all();

  // nullopt when no pipeline is listed for `source`.
  std::optional<pipeline_status> status(const mapping::ns& source) const;
  // The lag samples of `source`, oldest first (kept across a pipeline's replacement; dropped
  // when it stops for good only when the process ends). Any thread.
  std::vector<lag_sample> lag_history(const mapping::ns& source) const;
  // The cluster time through which every change mapping `name` reads (in every namespace it
  // reads) is applied ({0, 0} while one has applied nothing yet); with "", every mapping.
  // nullopt when no running pipeline plans for that name. Any thread.
  std::optional<bson::timestamp> applied_through(std::string_view name) const;
  // Per running pipeline whose position is known, its source's full name and the cluster time
  // a restart would resume it from (its stored checkpoint). Any thread.
  std::vector<std::pair<std::string, bson::timestamp>> stored_positions() const;

 private:
  // Lag, checkpoint age, applied-through and the events/s samples once a second until stopped.
  void report_lag(std::stop_token stop);
  // Per mapping name, the lowest applied-through of the pipelines that plan for it. Under mutex_.
  std::map<std::string, bson::timestamp, std::less<>> applied_through_locked() const;
  // The index of `source`'s pipeline in pipelines_, or npos.
  std::size_t find(const mapping::ns& source) const;
  // Removes `source`'s pipeline from the list and returns it (null when none is listed).
  std::unique_ptr<pipeline> take(const mapping::ns& source);

  parts_factory& parts_;
  metrics::metrics& metrics_;
  const pipeline_options opts_;
  // In start order. Changed only by the controlling thread, under the mutex; other threads
  // read under it.
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<pipeline>> pipelines_;
  std::map<std::string, std::deque<lag_sample>> lag_history_;  // by namespace; under mutex_
  // By namespace, (ms, applied events) once a second over rate_window; under mutex_.
  std::map<std::string, std::deque<std::pair<std::int64_t, std::uint64_t>>> applied_samples_;
  std::int64_t last_sample_ms_ = 0;  // under mutex_
  std::jthread lag_thread_;
};

}  // namespace denormd::pipeline
