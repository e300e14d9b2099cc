#pragma once
// What a pipeline reads from: the changes of one source namespace, handed to its event_queue
// in stream order from the source's own thread. source::watcher reads a MongoDB change
// stream; tests use fakes.
// Lifecycle: start() once; request_stop() then join() (the destructor of an implementation
// does both). Accessors are thread-safe.

#include <cstdint>
#include <string>

namespace denormd::source {

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

 protected:
  change_source() = default;
  change_source(const change_source&) = default;
  change_source& operator=(const change_source&) = default;
};

}  // namespace denormd::source
