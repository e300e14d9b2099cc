#pragma once
// The mapping set `denormd run` runs, and how it changes while running (docs/running.md,
// "Changing mappings"; docs/architecture.md, "Reload"). start() starts a pipeline per watched
// namespace and then the automatic backfill. A reload loads the mapping files again and validates
// them completely; on any error nothing changes. Then it moves, one namespace at a time:
// - a namespace whose mappings are the same (same names and fingerprints) keeps its pipeline
//   untouched, still planning with the snapshot it started with;
// - one whose mappings changed is handed over to a pipeline planning with the new set, from
//   just after the last event the old one applied (nothing dropped, nothing repeated);
// - one no longer watched stops, its checkpoint kept; a newly watched one starts from its
//   checkpoint (or now);
// - a mapping put back with the definition it had when it was removed replays that namespace's
//   changes from where it stopped, while the others skip what they applied already.
// Then the automatic backfill starts again over the new set (it backfills what is new or
// changed).
//
// With --ha (docs/architecture.md, "Reloads with --ha") a reload moves only the namespaces this
// instance holds; a newly watched one starts when its lease is taken, and the lease units
// follow the watched set (on_watched_changed). Where a removed mapping stopped is kept with
// each namespace's checkpoint (with and without --ha), stored with its token before the
// namespace's next pipeline starts, so that whichever pipeline (and instance) starts the
// namespace when it is put back replays it, across restarts and kill -9 too.
//
// Lifecycle: start() once, serve() on the main thread until stopped, then stop() (the
// automatic backfill; the pipelines are the supervisor's, stopped after). Thread-safety:
// watched() and waiting_for() from any thread; the rest from the main thread.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "app/options.h"
#include "app/reload_requests.h"
#include "app/replay.h"
#include "checkpoint/checkpoint_store.h"
#include "mapping/planner.h"
#include "mapping/reload_policy.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/services/auto_backfill.h"
#include "ops/services/mapping_versions.h"
#include "pipeline/supervisor.h"

namespace denormd::app {

class reloader {
 public:
  reloader(const options& opts, mongo::connection& conn, metrics::metrics& m,
           pipeline::supervisor& pipelines, checkpoint::checkpoint_store& checkpoints,
           std::string meta_db, std::shared_ptr<const mapping::planner> planner);
  ~reloader();
  reloader(const reloader&) = delete;
  reloader& operator=(const reloader&) = delete;

  // Starts the pipelines from `replay` or their checkpoints, then the automatic backfill.
  // Returns early when stopped.
  void start(const replay_point& replay, std::stop_token stop);
  // Runs the reloads `requests` asks for until `stop` is requested, then closes it.
  void serve(reload_requests& requests, std::stop_token stop);
  // Stops the automatic backfill between two of its batches.
  void stop();

  // The namespaces the running set watches.
  std::vector<mapping::ns> watched() const;
  // What a start (or a reload) retries against the server right now, as "<what>: <why>" ("" when
  // nothing): /readyz and the status page show it, as no pipeline says more meanwhile. Any
  // thread.
  std::string waiting_for() const;
  // The last reload's outcome and when it ended (ms since the epoch); nullopt before the
  // first. Any thread.
  struct reload_result {
    std::int64_t at_ms = 0;
    bool ok = false;
    std::string detail;  // the errors, when it failed
  };
  std::optional<reload_result> last_reload() const;
  // The running mapping set. Any thread.
  std::shared_ptr<const mapping::planner> planner() const;
  // With --ha: called on the main thread after a reload changed the watched set, once the
  // pipelines of the namespaces no longer watched have stopped.
  void on_watched_changed(std::function<void(const std::vector<mapping::ns>&)> f);

  // With --ha, on the main thread: the lease of `source` was taken; start its pipeline from its
  // checkpoint, writing under the lease.
  void start_unit(const mapping::ns& source, std::int64_t lease_epoch,
                  std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline,
                  std::stop_token stop);
  // The lease of `source` is lost or given up: stop its pipeline (its checkpoint stored).
  void stop_unit(const mapping::ns& source);
  // With --ha, on the main thread: the automatic backfill's lease was taken or went.
  void start_backfill_unit();
  void stop_backfill_unit();

 private:
  // Reads which mappings went away; notes where those gone since the last run stopped (at
  // their namespaces' checkpoints). False when stopped first.
  bool note_removed_at_start(std::stop_token stop);
  // Adds the entries of reload_policy::entries_at_start to the checkpoints, then clears the
  // stoppedAt they came from. False when stopped first.
  bool note_stopped(const std::vector<ops::recorded_mapping>& recorded,
                    const std::map<mapping::ns, mapping::resume_position>& positions,
                    std::stop_token stop);
  reload_outcome reload(std::stop_token stop);
  // Moves from the running set to `next`; stopped midway, what has moved runs with `next`.
  void move_to(std::shared_ptr<const mapping::planner> next, std::stop_token stop);
  // How many pipelines a reload kept, handed over, started and stopped.
  struct move_counts {
    int kept = 0, handed_over = 0, started = 0, stopped = 0;
  };
  // Carries out `moves` towards `next`, counting them. Stopped midway, it returns early.
  move_counts carry_out(const std::vector<mapping::namespace_move>& moves,
                        const std::shared_ptr<const mapping::planner>& next, std::stop_token stop);
  // Where `source` starts planning with `next` (under lease `lease_epoch`, 0 without --ha):
  // its checkpoint, settled with the entries it keeps (settle_stopped). nullopt when stopped
  // first.
  // Where a partition whose namespace was read in another layout (another partition count,
  // or none) starts, and what it hands over from (docs/architecture.md, "Partitioned
  // streams"); `from` is its own checkpoint's position. False when stopped first.
  bool take_over(const mapping::ns& source, const std::optional<checkpoint::checkpoint>& own,
                 pipeline::start_position& from, std::stop_token stop);
  std::optional<pipeline::start_position> from_checkpoint(
      const mapping::ns& source, const mapping::planner& next, std::int64_t lease_epoch,
      std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline, std::stop_token stop);
  void start_backfill();
  // Where the pipeline of `source` that stopped at `at` starts again planning with `next`, with
  // the mappings put back replaying what they missed; also stores where the mappings `next`
  // drops stopped (the only use when `next` no longer watches `source`).
  pipeline::start_position restart_position(pipeline::start_position at, const mapping::ns& source,
                                            const mapping::planner& next, std::stop_token stop);
  // Where `source` starts from `base` (under `base.lease_epoch` with --ha), settled with
  // `stored`, the stopped mappings its checkpoint keeps (mapping::reload_policy::settle). The
  // entries and any rewind are stored, with the token, before it returns (not with --dry-run).
  pipeline::start_position settle_stopped(pipeline::start_position base, const mapping::ns& source,
                                          const mapping::planner& next,
                                          const std::vector<checkpoint::stopped_mapping>& stored,
                                          std::stop_token stop);

  const options& opts_;
  mongo::connection& conn_;
  metrics::metrics& metrics_;
  pipeline::supervisor& pipelines_;
  checkpoint::checkpoint_store& checkpoints_;
  const std::string meta_db_;
  std::shared_ptr<const mapping::planner> planner_;
  // What the reloads decide: which namespaces move, which mappings went away, where streams
  // start.
  mapping::reload_policy policy_;
  std::function<void(const std::vector<mapping::ns>&)> on_watched_;
  std::unique_ptr<ops::auto_backfill> backfill_;
  mutable std::mutex watched_mutex_;  // guards watched_, and planner_ against other threads' reads
  std::vector<mapping::ns> watched_;
  std::optional<reload_result> last_reload_;  // under watched_mutex_
  mutable std::mutex waiting_mutex_;
  std::string waiting_;  // waiting_for(); under waiting_mutex_
  // Sets waiting_: the retry helpers of reloader.cc note what they retry through it.
  const std::function<void(std::string)> note_waiting_;
};

}  // namespace denormd::app
