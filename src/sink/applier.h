#pragma once
// The consumer side of one source: takes whatever its watcher queued (up to a batch), plans
// it, coalesces, writes, and only then may store the checkpoint of the last item. Before its
// first write its writer takes the source's write fence (batch_writer::open), and every
// checkpoint goes under the epoch that gave (docs/architecture.md, "The write fence"). A failed
// batch is retried from its first op not written for good (ops are idempotent) with capped
// exponential backoff and jitter, so position is never lost; a batch failing 5 times in a row
// is logged with why and counted (denormd_stuck_batches_total). The planner is an immutable
// snapshot the applier shares, so whoever swaps plans never changes one under a running batch.
// Lifecycle: start() once; request_stop() lets the batch in flight finish (and checkpoint)
// and ends the thread; join(). Accessors and wait_until_completed() are thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "checkpoint/position_store.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "sink/batch_writer.h"
#include "sink/computed_evaluator.h"
#include "source/event_queue.h"

namespace denormd::sink {

struct applier_options {
  mapping::ns source;
  std::size_t max_batch = 1000;
  bool dry_run = false;  // plan and log, write nothing, store no checkpoint
  std::chrono::milliseconds max_backoff{10000};
  // When the stored checkpoint was saved: until the first item is read, lag is its age.
  std::int64_t initial_checkpoint_ms = 0;
  // Without a checkpoint, the time the stream starts at (--start-at), if any: until the first
  // item is read, lag is counted from it (a replay is not "caught up" before it reads).
  std::int64_t start_at_ms = 0;
  // A batch smaller than max_batch waits this long for more events: fewer, larger writes
  // (and more coalescing) for a few milliseconds of latency. 0 writes at once.
  std::chrono::milliseconds linger{5};
  // The token of applied work is stored at most this often, and whenever the queue runs dry
  // or the applier stops. A crash replays at most this much, which is safe (ops are
  // idempotent) and spares one write command per batch. 0 stores after every batch.
  std::chrono::milliseconds checkpoint_interval{1000};
  // The stream's server-side filter as JSON, kept with each checkpoint.
  std::string filter;
  // While replaying history that only some mappings need, which mapping takes which event;
  // dropped once the stream is past every position it holds back.
  std::optional<mapping::replay_gate> gate;
  // While the source (a partition, or a whole namespace that was partitioned) takes over from
  // another layout: what that layout applied; dropped once the stream is past all of it.
  std::optional<mapping::handover> handover;
  // With --ha: the epoch of the lease this source is written under (the writer fences with it,
  // and its checkpoints carry it), and the steady-clock deadline (ms) past which nothing may be
  // written or stored (0 once the lease is gone). Without a lease (0, none), the writer claims
  // an epoch of its own.
  std::int64_t lease_epoch = 0;
  std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline;
  // Without a lease: called once when another writer has taken the source's fence since (a
  // second denormd without --ha, or one that replaced this paused process); the applier then
  // writes and stores nothing more and ends. Unset: it goes on retrying.
  std::function<void(const mongo::driver_error& why)> fenced_out;
  // The cluster time of the stored position the stream starts from (its checkpoint's, or
  // --start-at's), if known: stored_through() until this applier stores one.
  std::optional<bson::timestamp> initial_position_time;
  // Where the computed fields of the planner's mappings are evaluated on each batch's
  // documents; none when they have none (or in tests of plain mappings).
  std::shared_ptr<computed_evaluator> evaluator;
};

class applier {
 public:
  applier(std::shared_ptr<const mapping::planner> planner, batch_writer& w,
          checkpoint::position_store& checkpoints, source::event_queue& queue, metrics::metrics& m,
          applier_options opts);
  ~applier();
  applier(const applier&) = delete;
  applier& operator=(const applier&) = delete;

  void start();
  void request_stop();
  void join();

  // Seconds between now and the wall time of the oldest event not yet applied (0 when
  // caught up; the stored checkpoint's age before anything was read, as nothing says we are
  // caught up yet); and since the last stored checkpoint.
  double lag_seconds(std::int64_t now_ms) const;
  double checkpoint_age_seconds(std::int64_t now_ms) const;
  // The cluster time through which every event read is applied and acknowledged: the time of
  // the last applied event, or of the stream's high-water mark when it is quiet. Not moved
  // while checkpoints are held (a re-sync's backfill may still write older copies). nullopt
  // until the first position. Any thread.
  std::optional<bson::timestamp> applied_through() const;
  // The cluster time a restart would resume from: that of the checkpoint this applier last
  // stored, or `initial_position_time` until it stores one (nothing is stored in a dry run or
  // while checkpoints are held). nullopt when unknown. Any thread.
  std::optional<bson::timestamp> stored_through() const;
  std::uint64_t applied_events() const { return applied_.load(); }
  // The wall time of the newest applied event (ms since the epoch; 0 before the first), and
  // the attempts that failed (a write, a checkpoint, the fence) so far. Any thread.
  std::int64_t last_event_ms() const { return last_event_ms_.load(); }
  std::uint64_t errors() const { return errors_.load(); }
  // While the server refuses the batch in flight the credentials or a privilege, what was
  // refused and why ("cannot write the copies: the user's roles do not grant update on
  // shop.orders: ..."); "" otherwise. Any thread.
  std::string refused() const;
  // Queue items (events and token-only ones) fully applied and checkpointed so far; equal to
  // the watcher's pushed() count when everything read is applied.
  std::uint64_t completed_items() const { return completed_items_.load(); }
  // Waits until completed_items() reaches `n`; false when `stop` came first.
  bool wait_until_completed(std::uint64_t n, std::stop_token stop);
  // When the last checkpoint was stored (ms since the epoch; initial_checkpoint_ms until then).
  std::int64_t checkpoint_ms() const { return checkpoint_ms_.load(); }
  // While held, applied positions are kept but not stored (a re-sync's backfill is under
  // way: a restart must find the checkpoint before the lost history and re-sync again); on
  // release, the newest one is stored with the next batch or quiet spell. Any thread.
  void hold_checkpoints(bool held) { held_ = held; }
  bool checkpoints_held() const { return held_.load(); }
  // After join(): the position after which every item taken was applied (stored or not):
  // where a pipeline replacing this one starts. nullopt when nothing was applied.
  const std::optional<checkpoint::checkpoint>& applied_position() const { return position_; }

 private:
  void run(std::stop_token stop);
  // Retries `attempt` until it succeeds or stop is requested (then false).
  template <class F>
  bool with_retry(std::stop_token& stop, const char* stage, F&& attempt);
  // Stores `position_` if pending (retrying until stored or stopped); false when stopped first.
  bool store_pending(std::stop_token& stop);
  // Saves `position_` under the fence's epoch; refused once a lease's deadline has passed.
  mongo::status save_position();
  // Without a lease, or before its deadline.
  bool lease_valid() const;
  // The writer takes the source's write fence (again, after a failure); false when stopped
  // first or fenced out.
  bool open_writer(std::stop_token& stop);
  // Another writer took the fence (without a lease: the applier ends).
  bool fenced_out(const mongo::driver_error& e) const;
  // Notes (an access error) or clears (none) why the batch in flight is refused.
  void note_refused(const char* stage, const mongo::driver_error* e);
  // Parses and plans `items` into the batch buffers; returns the newest event's wall time, or
  // nullopt when stopped while the server computed the batch's computed fields.
  std::optional<std::int64_t> plan_batch(const std::vector<source::stream_item>& items,
                                         std::stop_token& stop);
  // Has the server compute the events' computed fields (retrying until done or stopped; false
  // when stopped) and notes on each event what failed.
  bool evaluate_computed(std::stop_token& stop);
  // Writes the batch's ops not written yet; a failure keeps what was written for good (the
  // retry starts after it).
  mongo::status write_rest();
  // Everything up to `cp` is applied: it is pending until stored.
  void advance(checkpoint::checkpoint cp);
  // `cp` was stored: a restart resumes from it.
  void stored(const checkpoint::checkpoint& cp);

  const std::shared_ptr<const mapping::planner> planner_;
  batch_writer& writer_;
  checkpoint::position_store& checkpoints_;
  source::event_queue& queue_;
  metrics::metrics& metrics_;
  applier_options opts_;
  const std::string name_;
  // Applier thread only: the batch being planned and written.
  std::vector<mapping::change_event> events_;
  std::vector<bson::document> tokens_;
  std::vector<mapping::write_op> ops_;
  std::size_t written_ops_ = 0;  // the first ops of ops_ written for good
  // The epoch the writer's fence was taken under (applier thread), and whether it is taken.
  std::int64_t epoch_ = 0;
  bool opened_ = false;
  bool ended_fenced_out_ = false;
  // The newest applied position, and whether it is not stored yet (applier thread).
  std::optional<checkpoint::checkpoint> position_;
  bool pending_ = false;
  // Wall time of the newest applied event: token-only checkpoints carry it (written by the
  // applier thread).
  std::atomic<std::int64_t> last_event_ms_{0};
  std::atomic<std::uint64_t> errors_{0};
  mutable std::mutex refused_mutex_;
  std::string refused_;                   // under refused_mutex_
  std::atomic<bool> any_refused_{false};  // refused_ is not empty
  // The cluster time of the last item planned when it is an event (its token names it).
  std::optional<bson::timestamp> last_item_time_;
  std::chrono::steady_clock::time_point stored_at_{};
  std::atomic<std::int64_t> in_flight_oldest_ms_{0};
  std::atomic<std::int64_t> checkpoint_ms_{0};
  std::atomic<bool> read_any_{false};  // an item was taken from the queue
  std::atomic<bool> held_{false};
  // applied_through() and stored_through(), packed as t << 32 | i; 0 for none.
  std::atomic<std::uint64_t> applied_through_{0};
  std::atomic<std::uint64_t> stored_through_{0};
  std::atomic<std::uint64_t> applied_{0};
  std::atomic<std::uint64_t> completed_items_{0};
  std::mutex completed_mutex_;  // with completed_cv_: wakes wait_until_completed()
  std::condition_variable_any completed_cv_;
  std::jthread thread_;
};

}  // namespace denormd::sink
