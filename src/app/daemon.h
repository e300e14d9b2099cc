#pragma once
// `denormd run`: one pipeline (watcher -> bounded queue -> applier) per source namespace,
// the metrics endpoint, signal handling. Starts in data-flow order and stops in reverse:
// watchers stop reading, queues close, appliers finish the batch in flight and store its
// checkpoint, then the endpoint and the connection go. run() blocks until SIGINT/SIGTERM
// (or request_stop()) and returns the exit code. request_stop() is thread-safe.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "app/options.h"
#include "mapping/mapping.h"

namespace denormd::app {

class daemon {
 public:
  daemon(options opts, std::vector<mapping::mapping> mappings);
  ~daemon();
  daemon(const daemon&) = delete;
  daemon& operator=(const daemon&) = delete;

  int run();
  void request_stop();

 private:
  bool wait_or_stop(std::chrono::milliseconds d);

  options opts_;
  std::vector<mapping::mapping> mappings_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace denormd::app
