#pragma once
// What a supervisor builds each pipeline from: the daemon's factory makes MongoDB parts (a
// change-stream watcher, the bulk writer, the checkpoint collection, re-sync by backfill);
// tests make fakes. Called from the supervisor's controlling thread, except the re-sync
// calls, which a pipeline makes from its source's and its backfill's threads (so they must be
// thread-safe).

#include <atomic>
#include <memory>
#include <optional>
#include <stop_token>

#include "bson/value.h"
#include "checkpoint/position_store.h"
#include "mapping/mapping.h"
#include "mapping/planner.h"
#include "mongo/driver_error.h"
#include "sink/batch_writer.h"
#include "sink/computed_evaluator.h"
#include "source/change_source.h"
#include "source/event_queue.h"
#include "source/watcher.h"

namespace denormd::pipeline {

// Where a pipeline's source starts reading: after a resume token, else at an operation time,
// else now. `saved_ms`: when the position was stored (the lag until the first read). `gate`:
// while replaying history some mappings have applied already, which mapping takes which event.
// A pipeline whose filter differs from the one the token came from starts at the token's
// cluster time instead, behind a gate (MongoDB cannot resume from an event token that the new
// filter drops).
struct start_position {
  std::optional<bson::document> resume_after;
  std::optional<bson::timestamp> start_at;
  std::int64_t saved_ms = 0;
  std::optional<mapping::replay_gate> gate;
  // What `resume_after` came from: the cluster time of the event it names (none for a
  // high-water mark or when unknown) and the server-side filter of that stream ("" for none).
  std::optional<bson::timestamp> token_time;
  std::string filter;
  // With --ha: the lease the pipeline writes under (sink::applier_options).
  std::int64_t lease_epoch = 0;
  std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline;
  // While a partition takes over from another layout of its namespace: what that layout has
  // applied, per key (docs/architecture.md, "Partitioned streams").
  std::optional<mapping::handover> handover;
};

class parts_factory {
 public:
  virtual ~parts_factory() = default;

  // The reader of `source`'s changes into `queue` from `from`; it calls `resync` when the
  // history it needs is lost. `images` says which document states the events carry where the
  // collection keeps them (fullDocumentBeforeChange, and fullDocument as of the change);
  // `filter`, the stages after $changeStream.
  virtual std::unique_ptr<source::change_source> make_source(
      const mapping::ns& source, const start_position& from, mapping::stream_images images,
      const bson::array& filter, source::event_queue& queue, source::resync_hook resync) = 0;
  // The writer of `source`'s batches (it takes the source's write fence when its applier opens
  // it, under the applier's lease epoch, if any).
  virtual std::unique_ptr<sink::batch_writer> make_writer(const mapping::ns& source) = 0;
  // Where `source`'s computed fields are evaluated (called only when its mappings have some);
  // nullptr leaves them absent (fakes of plain mappings).
  virtual std::shared_ptr<sink::computed_evaluator> make_evaluator(const mapping::ns& /*source*/) {
    return nullptr;
  }
  // Shared by every pipeline; each applier calls it from its own thread.
  virtual checkpoint::position_store& positions() = 0;
  // History of `source` was lost and everything read before is applied: the cluster's
  // operation time now, from which the source streams again while the re-sync backfills.
  virtual mongo::result<bson::timestamp> resync_start(const mapping::ns& source) = 0;
  // Brings the copies of `planner`'s mappings that read `source` in line from scratch while
  // the source's stream is applied beside it. True when done, false when stopped first.
  virtual mongo::result<bool> resync_backfill(const mapping::planner& planner,
                                              const mapping::ns& source, std::stop_token stop) = 0;

 protected:
  parts_factory() = default;
  parts_factory(const parts_factory&) = default;
  parts_factory& operator=(const parts_factory&) = default;
};

}  // namespace denormd::pipeline
