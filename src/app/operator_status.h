#pragma once
// What GET /api/v1/status answers (README, "The operator's page"): one JSON document made of
// what the server holds (checkpoints, history headroom and leases as `denormd status` reads
// them, mapping versions and backfills, dead letters) and what this daemon holds in memory
// (each stream's state, lag and the last 15 minutes of it). Nothing in it names the
// connection string. Read from the status thread (app/status_api); every part it reads is
// thread-safe.

#include <cstdint>
#include <string>

#include "app/reloader.h"
#include "common/expected.h"
#include "mongo/connection.h"
#include "pipeline/supervisor.h"

namespace denormd::app {

struct status_context {
  mongo::connection& conn;
  std::string meta_db;
  const reloader& running;
  const pipeline::supervisor& pipelines;
  std::string mappings_folder;
  std::string instance;  // with --ha; "" without
  bool lifecycle = false;
  std::int64_t started_ms = 0;
};

// The dead letters shown, newest first.
inline constexpr std::int64_t newest_dead_letters = 20;

expected<std::string> read_operator_status(const status_context& c);

}  // namespace denormd::app
