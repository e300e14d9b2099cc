#pragma once
// The automatic backfill of `denormd run`: the mappings whose documents were not backfilled
// under their running definition (new, or changed since the last start; README, "Changing
// mappings") are backfilled in the background while the streams run. It starts after the
// pipelines, whose streams go on from their checkpoints, so a write made while it runs reaches
// the new definition through the stream either way; the backfiller stores each mapping's
// progress, so a stop or a kill -9 continues where it was; failures are retried with a
// back-off until it is stopped. Lifecycle: start() once, stop() (or the destructor) joins.
// The connection, planner and metrics must outlive it.

#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"

namespace denormd::ops {

class auto_backfill {
 public:
  auto_backfill(mongo::connection& conn, const mapping::planner& planner, metrics::metrics& m,
                std::string meta_db);
  ~auto_backfill();
  auto_backfill(const auto_backfill&) = delete;
  auto_backfill& operator=(const auto_backfill&) = delete;

  // Backfills `which` (mappings of the planner), one after the other, on a thread of its own.
  void start(std::vector<const mapping::mapping*> which);
  // Stops between two batches (progress is stored) and joins.
  void stop();

 private:
  void run(const std::vector<const mapping::mapping*>& which, std::stop_token stop);

  mongo::connection& conn_;
  const mapping::planner& planner_;
  metrics::metrics& metrics_;
  std::string meta_db_;
  std::jthread thread_;
};

}  // namespace denormd::ops
