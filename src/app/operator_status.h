#pragma once
// What GET /api/v1/status answers (docs/operator-page.md): one JSON document made of
// what the server holds (checkpoints, history headroom and leases as `denormd status` reads
// them, what each --ha instance last reported of the namespaces it holds, mapping versions and
// backfills, dead letters) and what this daemon holds in memory (each stream's state, lag and
// the last 15 minutes of it). So any instance shows the whole cluster, each namespace from its
// holder (docs/architecture.md, "One view of the cluster").
//
// It always answers: when MongoDB cannot be reached, it says so and since when, shows what it
// last read from the server marked with that reading's age, and every namespace it does not
// stream itself as not streaming, with why. Nothing in it names the connection string.
//
// Lifecycle: one per daemon. Thread-safety: read() from one thread at a time (the status
// thread, app/status_api); every part it reads is thread-safe.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/reloader.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/commands/status_probe.h"
#include "ops/services/mapping_versions.h"
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
  // Where each mapping's write amplification (denormd_fanout) is read; none when null.
  const metrics::metrics* metrics = nullptr;
};

// The dead letters shown, newest first.
inline constexpr std::int64_t newest_dead_letters = 20;

// Where the page turns a figure amber and red: the alert rules' thresholds
// (deploy/prometheus/alerts.yml: DenormdLagHigh, DenormdLagCritical, DenormdHistoryHeadroomLow),
// and red headroom at a tenth of the amber one.
struct status_thresholds {
  double lag_warn_seconds = 30;
  double lag_critical_seconds = 300;
  double headroom_warn_seconds = 3600;
  double headroom_critical_seconds = 360;
};

class operator_status {
 public:
  explicit operator_status(status_context c);

  // The status document as JSON. Never fails.
  std::string read();

 private:
  // What the last successful reading of the server gave.
  struct server_view {
    std::int64_t read_ms = 0;
    std::vector<ops::source_status> sources;
    std::vector<lease::instance_row> instances;
    std::vector<ops::mapping_version> versions;
    std::map<std::string, std::int64_t> letter_counts;
    bson::array newest_letters;
  };
  // A backfill's walked documents, as last seen, for its rate.
  struct backfill_seen {
    std::int64_t at_ms = 0;
    std::int64_t documents = 0;
    double rate = 0;
  };

  // One reading: the server's part as it could be read now, or as last read.
  struct reading {
    std::int64_t now = 0;
    bool reachable = true;  // false: the server does not answer at all
    bool read_ok = true;    // false: the status reads fail (unreachable or refused)
    std::string error;
    const server_view* view = nullptr;  // the last successful reading; null before one
    double view_age = 0;                // seconds
  };
  // How the namespaces stand, for the health summary.
  struct tally {
    std::int64_t streaming = 0;
    std::int64_t lag_warn = 0;
    std::int64_t lag_critical = 0;
  };

  // Reads the server's part; the failure says what could not be read.
  mongo::result<server_view> read_server();
  reading take_reading();
  bson::document namespace_entry(const mapping::ns& src, const reading& r, tally& t) const;
  bson::array mapping_list(const server_view* view, std::int64_t now);
  // A mapping's dependents written per event (denormd_fanout): since the start, and over the
  // readings of the last amplification_window_ms.
  bson::document write_amplification(const std::string& mapping, std::int64_t now);

  status_context c_;
  std::optional<server_view> last_;
  std::int64_t unreachable_since_ms_ = 0;  // since when the reads fail; 0 while they succeed
  std::map<std::string, backfill_seen> backfills_;
  // denormd_fanout's sum and count per mapping as read, oldest first, over the window.
  struct fanout_seen {
    std::int64_t at_ms = 0;
    double sum = 0;
    std::uint64_t count = 0;
  };
  std::map<std::string, std::deque<fanout_seen>> fanouts_;
};

// The window of the page's write amplification.
inline constexpr std::int64_t amplification_window_ms = 5 * 60 * 1000;

}  // namespace denormd::app
