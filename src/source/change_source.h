#pragma once
// What a pipeline reads from: the changes of one source namespace, handed to its event_queue
// in stream order from the source's own thread. source::watcher reads a MongoDB change
// stream; tests use fakes.
// Lifecycle: start() once; request_stop() then join() (the destructor of an implementation
// does both). Accessors are thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "bson/value.h"
#include "mongo/driver_error.h"

namespace denormd::source {

// A re-sync under way after lost history (docs/architecture.md, "Correctness"): the source
// streams again from `from` at once, while the backfill runs beside it; `finished` turns true
// once the backfill is done (the stored checkpoint may move on from then).
struct resync_started {
  bson::timestamp from;
  std::shared_ptr<const std::atomic<bool>> finished;
};

// Starts a re-sync, once everything read before is applied; nullopt when stopped first
// (nothing to retry); an error is retried. Called from the source's own thread.
using resync_hook = std::function<mongo::result<std::optional<resync_started>>(std::stop_token)>;

class change_source {
 public:
  virtual ~change_source() = default;

  virtual void start() = 0;
  virtual void request_stop() = 0;
  virtual void join() = 0;

  // Streaming; otherwise state() says why not ("starting", "re-syncing ...", "stopped").
  virtual bool ready() const = 0;
  virtual std::string state() const = 0;
  // Items handed to the queue so far.
  virtual std::uint64_t pushed() const = 0;
  // Reads that failed (the stream reopened after each) so far.
  virtual std::uint64_t errors() const = 0;

 protected:
  change_source() = default;
  change_source(const change_source&) = default;
  change_source& operator=(const change_source&) = default;
};

}  // namespace denormd::source
