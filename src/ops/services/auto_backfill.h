#pragma once
// The automatic backfill of `denormd run`: it records the mappings the daemon runs
// (mapping_versions.h), then backfills in the background, while the streams run, those whose
// documents were not backfilled under their running definition (new, or changed since the
// last start; docs/running.md, "Changing mappings"). It starts after the pipelines, whose streams
// go on from their checkpoints, so a write made while it runs reaches the new definition through
// the stream either way; the backfiller stores each mapping's progress, so a stop or a kill -9
// continues where it was; a server that does not answer, and failures, are retried with a
// back-off until it is stopped. Lifecycle: start() once, stop() (or the destructor) joins.
// The connection and metrics must outlive it; it shares the planner snapshot it backfills.

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/services/mapping_versions.h"

namespace denormd::ops {

class auto_backfill {
 public:
  // With `wait_for_streams` (--ha), a mapping is backfilled only once every namespace it reads
  // is streamed with its definition (ops/streamed_sets.h); without, the pipelines of this
  // process started with it before the backfill did.
  auto_backfill(mongo::connection& conn, std::shared_ptr<const mapping::planner> planner,
                metrics::metrics& m, std::string meta_db, bool wait_for_streams);
  ~auto_backfill();
  auto_backfill(const auto_backfill&) = delete;
  auto_backfill& operator=(const auto_backfill&) = delete;

  // On a thread of its own: records the planner's mappings as running since `now_ms`, then,
  // with `backfill`, backfills the stale ones one after the other (without, it names them).
  void start(std::int64_t now_ms, bool backfill);
  // Stops between two batches (progress is stored) and joins.
  void stop();

 private:
  void run(std::int64_t now_ms, bool backfill, std::stop_token stop);
  // Records the mappings, then returns those not backfilled under their running definition;
  // nullopt when stopped first.
  std::optional<std::vector<const mapping::mapping*>> stale(std::int64_t now_ms, bool backfill,
                                                            std::stop_token& stop);
  void backfill(std::vector<const mapping::mapping*> which, std::stop_token& stop);

  mongo::connection& conn_;
  const std::shared_ptr<const mapping::planner> planner_;
  metrics::metrics& metrics_;
  std::string meta_db_;
  const bool wait_for_streams_;
  std::jthread thread_;
};

}  // namespace denormd::ops
