#pragma once
// One watched namespace's running pipeline: its change source -> a bounded event_queue -> an
// applier (and the applier's writer), planning with one immutable planner snapshot it shares.
//
// Lifecycle: constructed stopped (not ready, "starting"); start() starts the applier, then
// the source. Stopping runs in two stages so a supervisor can stop many pipelines in the
// daemon's order: stop_reading() and join_reading() (every item the source read is queued),
// then finish() and join() (the queue closes, the applier finishes the batch in flight and
// stores its checkpoint). The destructor does whatever is left. Thread-safety: ready(),
// state(), report_lag() and applied_events() from any thread; the rest from the supervisor's.
//
// After lost history the source asks for a re-sync (its hook runs on the source's thread):
// once everything read is applied, the pipeline holds its checkpoints, takes the time the
// source streams again from, and backfills on a thread of its own beside the stream; when
// the backfill is done the checkpoints move on (docs/architecture.md, "Correctness").

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "metrics/metrics.h"
#include "pipeline/parts_factory.h"
#include "sink/applier.h"

namespace denormd::pipeline {

struct pipeline_options {
  // Queue bounds: enough to keep the writer busy, small enough that memory stays bounded
  // while the writer is blocked.
  std::size_t queue_items = 4000;
  std::size_t queue_bytes = 4 * 1024 * 1024;
  // For every applier; `source` and `initial_checkpoint_ms` are set per pipeline.
  sink::applier_options applier;
};

// A stream filter as checkpoints keep it: JSON, "" for none.
std::string filter_text(const bson::array& filter);

class pipeline {
 public:
  pipeline(mapping::ns source, std::shared_ptr<const mapping::planner> planner, start_position from,
           parts_factory& parts, metrics::metrics& m, const pipeline_options& opts);
  ~pipeline();
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  void start();
  void stop_reading();
  void join_reading();
  void finish();
  void join();

  const mapping::ns& source() const { return source_; }
  // Streaming, and not held back by writes the server refuses for the credentials or a
  // privilege (the state then says which).
  bool ready() const { return reader_->ready() && applier_->refused().empty(); }
  std::string state() const {
    std::string refused = applier_->refused();
    return refused.empty() ? reader_->state() : refused;
  }
  // Sets the lag and checkpoint-age gauges of this source.
  void report_lag(std::int64_t now_ms) const;
  double lag_seconds(std::int64_t now_ms) const;
  double checkpoint_age_seconds(std::int64_t now_ms) const;
  std::uint64_t applied_events() const { return applier_->applied_events(); }
  std::int64_t last_event_ms() const { return applier_->last_event_ms(); }
  // Failed reads of the source and failed attempts of the applier so far.
  std::uint64_t errors() const { return reader_->errors() + applier_->errors(); }
  std::optional<bson::timestamp> applied_through() const { return applier_->applied_through(); }
  std::optional<bson::timestamp> stored_through() const { return applier_->stored_through(); }
  const mapping::planner& planner() const { return *planner_; }
  // After join(): where a pipeline taking over from this one starts, so that nothing applied
  // is applied again and nothing read but not applied is lost. During an unfinished re-sync,
  // where this one started (the new one re-syncs again).
  start_position resume_position() const;

 private:
  // The source's re-sync hook: waits until everything read is applied, then starts a re-sync.
  mongo::result<std::optional<source::resync_started>> resync(std::stop_token source_stop);
  // The re-sync's backfill, retried until done or stopped.
  void run_backfill(std::stop_token stop, std::atomic<bool>& finished);
  // Stops the re-sync backfill under way, if any, and waits for it.
  void stop_backfill();

  const mapping::ns source_;
  const std::shared_ptr<const mapping::planner> planner_;
  const bson::array filter_;       // the stream's filter: the stages that drop events
  const std::string filter_text_;  // as kept with checkpoints ("" for none)
  // Every stage after $changeStream: the filter, then the projection, which drops no event
  // and so plays no part in where a stream may resume.
  const bson::array stages_;
  const start_position from_;
  parts_factory& parts_;
  metrics::metrics& metrics_;
  const std::string name_;
  // Declared in data-flow order, so they are destroyed reader first.
  std::unique_ptr<source::event_queue> queue_;
  std::unique_ptr<sink::batch_writer> writer_;
  std::unique_ptr<sink::applier> applier_;
  std::unique_ptr<source::change_source> reader_;
  // The re-sync's backfill: started and replaced on the source's thread, joined once the
  // source is (join_reading), so only one thread touches it at a time.
  std::jthread backfill_;
  std::atomic<bool> resync_unfinished_{false};
};

}  // namespace denormd::pipeline
