#pragma once
// The daemon's HTTP routes, registered in an http::route_table: GET /metrics, /healthz and
// /readyz (docs/metrics.md), POST (or PUT) /-/reload (docs/running.md, "Changing mappings"),
// GET /applied (read-your-writes through the copies; docs/running.md, "Waiting for the
// copies"), and the operator's page at / with its data at /api/v1/status
// (docs/operator-page.md).
//
// Thread-safety: the handlers call the functions below from the HTTP thread, concurrently with
// the rest of the daemon, so those must be thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "app/reload_requests.h"
#include "bson/value.h"
#include "http/route_table.h"

namespace denormd::app {

// What /readyz reports; `detail` lists what is not ready (one item per line works best).
struct readiness {
  bool ready = false;
  std::string detail;
};

// What the routes read and ask for.
struct route_sources {
  std::function<std::string()> metrics;  // the Prometheus text exposition
  std::function<readiness()> ready;
  // Asks for a reload and returns at once; `done` is called once, from any thread, when it has
  // run (the request waits for it, the other connections do not). Empty: no /-/reload.
  std::function<void(reload_requests::answer done)> reload;
  // Through when mapping `name` ("" = every mapping) has applied everything it reads; nullopt
  // when no running mapping has that name. Empty: no /applied.
  std::function<std::optional<bson::timestamp>(std::string_view name)> applied;
  // Answers GET /api/v1/status (status_api::ask), from any thread. Empty: neither it nor the
  // operator's page at / is served.
  std::function<void(std::shared_ptr<http::reply>)> status;
};

// GET /applied answers 200 once `applied` reports at least `after`, 408 when it has not within
// `timeout` (asked again every 20 ms, without holding the HTTP thread), 404 for an unknown
// mapping, 400 for a bad query.
http::route_table daemon_routes(route_sources sources);

}  // namespace denormd::app
