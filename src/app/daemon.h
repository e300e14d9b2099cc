#pragma once
// `denormd run`: sequences start-up and shutdown around a supervisor that owns one pipeline
// (watcher -> bounded queue -> applier) per watched namespace, the HTTP endpoint (metrics,
// health, readiness) and signal handling. Starts in data-flow order and stops in reverse:
// watchers stop reading, queues close, appliers finish the batch in flight and store its
// checkpoint, then the endpoint and the connection go. run() blocks until SIGINT/SIGTERM
// (or request_stop()) and returns the exit code. request_stop() is thread-safe.

#include <memory>
#include <stop_token>
#include <vector>

#include "app/options.h"
#include "mapping/mapping.h"

namespace denormd::http {
class web_security;
}

namespace denormd::app {

class daemon {
 public:
  // `security`: the HTTP port's TLS and basic auth (--web-config-file); null: plain and open.
  daemon(options opts, std::vector<mapping::mapping> mappings,
         std::shared_ptr<http::web_security> security = nullptr);
  ~daemon();
  daemon(const daemon&) = delete;
  daemon& operator=(const daemon&) = delete;

  int run();
  void request_stop();

 private:
  options opts_;
  std::vector<mapping::mapping> mappings_;
  std::shared_ptr<http::web_security> security_;
  std::stop_source stop_;
};

}  // namespace denormd::app
