#pragma once
// The history-headroom probe of `denormd run`: every interval, on a thread of its own, it
// reads the oldest entry the server keeps (oplog_window.h) and sets, per running source,
// denormd_history_headroom_seconds = the source's stored position - that entry's time. The
// sources and their positions come from a callback (the supervisor's), so it knows no
// pipeline. A read the server refuses (no privilege on local.oplog.rs, error 13) or that fails
// otherwise removes every series (a stale value would mislead) and is logged once, with what
// to grant, until a read succeeds again; reads are never retried faster than the interval.
//
// Lifecycle: start() once, stop() (or the destructor) joins; probe() runs one round on the
// caller's thread, for tests, and must not overlap the thread's. The connection, the metrics
// and whatever the callback reads must outlive it.

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bson/value.h"
#include "metrics/metrics.h"
#include "mongo/document_client.h"

namespace denormd::ops {

// Where a restart of one source's stream would resume: its stored checkpoint's cluster time.
struct source_position {
  std::string source;  // "db.coll", the `source` label
  bson::timestamp at;
};
using positions_fn = std::function<std::vector<source_position>()>;

class history_probe {
 public:
  history_probe(mongo::document_client& conn, metrics::metrics& m, positions_fn positions,
                std::chrono::milliseconds interval);
  ~history_probe();
  history_probe(const history_probe&) = delete;
  history_probe& operator=(const history_probe&) = delete;

  // Probes at once, then every interval, until stop().
  void start();
  void stop();
  // One round: reads the oldest entry and sets (or removes) every source's series.
  void probe();

 private:
  void clear();

  mongo::document_client& conn_;
  metrics::metrics& metrics_;
  const positions_fn positions_;
  const std::chrono::milliseconds interval_;
  // The probing thread's (or probe()'s caller's): the sources that have a series, and the
  // error code of the failure last logged while reads fail.
  std::set<std::string, std::less<>> shown_;
  std::optional<std::string> failing_;
  std::jthread thread_;
};

}  // namespace denormd::ops
