#pragma once
// GET /api/v1/status, the operator's page's data (docs/operator-page.md): a JSON
// document that reading the server makes (checkpoints, history headroom, leases, mapping
// versions and backfills, dead letters) plus what the daemon holds in memory (each stream's
// state, lag and lag history). Reading takes round trips, so it runs on a thread of its own,
// never the HTTP thread, at most once per `min_interval`: requests that arrive meanwhile share
// one reading. Lifecycle: constructed with the function that reads; ask() from any thread;
// the destructor answers whoever still waits (503) and joins the thread.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/expected.h"
#include "http/route_table.h"

namespace denormd::app {

class status_api {
 public:
  // Returns the JSON text of the status, or why it could not be read.
  using reader = std::function<expected<std::string>()>;

  explicit status_api(reader read,
                      std::chrono::milliseconds min_interval = std::chrono::milliseconds(1000));
  ~status_api();
  status_api(const status_api&) = delete;
  status_api& operator=(const status_api&) = delete;

  // Answers `to` with the status (200, application/json) or 503 with why not.
  void ask(std::shared_ptr<http::reply> to);

 private:
  void run(std::stop_token stop);

  const reader read_;
  const std::chrono::milliseconds min_interval_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<std::shared_ptr<http::reply>> waiting_;  // under mutex_
  std::jthread thread_;
};

}  // namespace denormd::app
