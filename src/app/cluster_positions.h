#pragma once
// With --ha, GET /applied asked of any instance answers for the whole cluster: a namespace this
// instance does not stream is applied through the newer of two times its holder wrote to the
// server, each a true promise: the namespace's stored checkpoint (stored only once what it
// names was applied) and the appliedThrough of the holder's last report (lease/unit_report.h).
// They are read at most every `every`, only while someone asks, on a thread of its own, so
// that the HTTP thread never waits for the server (docs/architecture.md, "One view of the
// cluster").
//
// Lifecycle: started by its constructor, stopped by its destructor. Thread-safety: through()
// from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bson/value.h"
#include "mapping/ns.h"
#include "mongo/connection.h"

namespace denormd::app {

class cluster_positions {
 public:
  // `namespaces`: the watched set when a reading begins (a reload changes it); called on the
  // reading thread.
  cluster_positions(mongo::connection& conn, std::string meta_db, std::chrono::milliseconds every,
                    std::function<std::vector<mapping::ns>()> namespaces);
  ~cluster_positions();
  cluster_positions(const cluster_positions&) = delete;
  cluster_positions& operator=(const cluster_positions&) = delete;

  // Through which cluster time `ns` is applied, as last read; nullopt before a reading. Asks for
  // readings for a while.
  std::optional<bson::timestamp> through(const mapping::ns& ns);

 private:
  void run(std::stop_token stop);
  // One reading of the checkpoints and the reports.
  std::map<std::string, bson::timestamp> read(const std::vector<mapping::ns>& namespaces);

  mongo::connection& conn_;
  const std::string meta_db_;
  const std::chrono::milliseconds every_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  const std::function<std::vector<mapping::ns>()> namespaces_;
  std::map<std::string, bson::timestamp> through_;  // under mutex_
  std::chrono::steady_clock::time_point asked_{};   // under mutex_
  std::jthread thread_;
};

}  // namespace denormd::app
