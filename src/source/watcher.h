#pragma once
// One change-stream reader per source namespace, on its own thread: opens the stream at the
// stored position, hands every event to its queue in stream order, turns idle periods into
// token-only items (so checkpoints keep up with a quiet source), and reopens after transient
// errors from the last token it handed over. Lost history is re-synced through the resync
// hook: streaming goes on at once from the time taken before it while its backfill runs, so
// the stream keeps its place in the oplog however long the backfill takes; the re-syncs until
// one's backfill finishes are one episode, counted and logged once. Invalidation (drop,
// rename) leaves the watcher not ready, with the reason in state(), until the collection
// exists again; it then re-syncs as after lost history (without a resync hook it ends).
// Lifecycle: start() once, request_stop() then join(). Thread-safe accessors.

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bson/value.h"
#include "common/backoff.h"
#include "common/retry.h"
#include "mapping/ns.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "source/change_source.h"
#include "source/event_queue.h"

namespace denormd::source {

struct watcher_options {
  mapping::ns source;
  std::optional<bson::document> resume_after;  // the stored checkpoint or --resume-after
  std::optional<bson::timestamp> start_at;     // --start-at (when there is no token)
  std::int32_t max_await_ms = 1000;
  bool pre_images = false;   // ask for fullDocumentBeforeChange (whenAvailable)
  bool post_images = false;  // ask for fullDocument as of each change, not updateLookup
  bson::array pipeline;      // the stages after $changeStream (the server-side filter)
  std::chrono::milliseconds max_backoff{10000};
  // Between re-syncs of one lost-history episode: when the stream loses its place again
  // (the oplog rolled past it before it was read), the next re-sync waits, from the first
  // delay doubling up to the cap, so re-syncs do not feed the roll. History lost again
  // within the cap after a re-sync caught up goes on from the last wait.
  std::chrono::milliseconds first_resync_backoff{1000};
  std::chrono::milliseconds max_resync_backoff{30000};
  // When history is lost. Without it the watcher stops, not ready.
  resync_hook resync;
};

class watcher final : public change_source {
 public:
  watcher(mongo::connection& conn, watcher_options opts, event_queue& queue, metrics::metrics& m);
  ~watcher() override;
  watcher(const watcher&) = delete;
  watcher& operator=(const watcher&) = delete;

  void start() override;
  void request_stop() override;
  void join() override;

  const mapping::ns& source() const { return opts_.source; }
  bool ready() const override { return ready_.load(); }
  std::string state() const override;
  std::uint64_t pushed() const override { return pushed_.load(); }
  std::uint64_t errors() const override { return errors_.load(); }

 private:
  enum class stop_reason { none, requested, history_lost, invalidated };

  // Where the stream reads from, carried over from one opened stream to the next.
  struct position {
    std::optional<bson::document> token;
    std::string resume_reason;  // the metrics label of the next open ("": the first start)
    std::int64_t last_idle_token_ms = 0;
    bool ended = false;  // the queue closed or the stream was invalidated: the watcher ends
  };
  // A failed open or read of the stream, and which of the two it was (for the log).
  struct stream_failure {
    mongo::driver_error error;
    std::string what;
  };

  void run(std::stop_token stop);
  // After lost history: whether to re-sync, at once or after the re-sync back-off, or stop
  // (without a resync hook).
  retry_verdict history_lost(const mongo::driver_error& e);
  // Starts the re-sync that lost history calls for and streams from its time; false when
  // stopped meanwhile.
  bool start_resync(position& at, std::stop_token& stop);
  // Runs the resync hook until it starts a re-sync; nullopt when stopped meanwhile.
  std::optional<resync_started> resync_until_started(std::stop_token& stop);
  // Streams from `at`, reopening after failures with `reopen`, until the history is lost (the
  // error) or the watcher ends (stopped, or `at.ended`).
  mongo::status stream(position& at, backoff& reopen, std::stop_token& stop);
  // Opens one stream and reads it until it fails, ends or is stopped.
  expected<void, stream_failure> open_and_read(position& at, backoff& reopen,
                                               std::stop_token& stop);
  mongo::status read_stream(mongo::change_stream& stream, position& at, std::stop_token& stop);
  // Hands one event to the queue and notes a drop, rename or invalidation; false when the
  // watcher ends (the queue closed, or the stream was invalidated).
  bool queue_event(std::vector<std::uint8_t> event, bson::document token,
                   const std::stop_token& stop);
  // After an invalidation: polls until the source collection exists; false when stopped.
  bool wait_for_source(std::stop_token& stop);
  // The re-sync's backfill finished while the stream read on: the episode is over.
  void end_episode();
  void set_state(bool ready, std::string state);

  mongo::connection& conn_;
  watcher_options opts_;
  event_queue& queue_;
  metrics::metrics& metrics_;
  const std::string name_;  // "db.coll", the metrics label
  std::atomic<bool> ready_{false};
  std::atomic<stop_reason> reason_{stop_reason::none};
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> errors_{0};
  bool invalidated_ = false;  // the stream was invalidated, with a resync hook: watcher thread
  mutable std::mutex state_mutex_;
  std::string state_ = "starting";
  // Lost history until a stream reads again, and the wait before the next re-sync (it
  // carries over to an episode that starts soon after the last caught up): watcher thread.
  struct episode {
    int resyncs = 0;
    std::chrono::steady_clock::time_point began;
    std::shared_ptr<const std::atomic<bool>> finished;  // the latest re-sync's backfill
  };
  std::optional<episode> episode_;
  backoff resync_backoff_;
  std::optional<std::chrono::steady_clock::time_point> caught_up_at_;
  std::jthread thread_;
};

}  // namespace denormd::source
