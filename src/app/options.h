#pragma once
// The parsed command line (docs/running.md). Parsing is pure; the application acts on the result.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"

namespace denormd::app {

enum class command { run, check, plan, backfill, verify, status, cost, help, version };

struct options {
  app::command cmd = command::help;
  std::string help_topic;  // the command whose help was asked for ("" = general)
  std::string uri;         // --uri or DENORMD_URI
  std::string db;          // --db: default database for mappings that name none
  std::string mappings_dir = "mappings";
  std::string metrics_addr = "127.0.0.1:9464";
  std::string resume_after;                // Extended JSON token
  std::string start_at;                    // ISO-8601 or t:i
  std::string events_file;                 // plan
  std::vector<std::string> only_mappings;  // --mapping NAME (repeatable)
  std::vector<std::string> partitions;     // run, status: --partitions NS=N (repeatable)
  bool dry_run = false;
  bool repair = false;
  bool json = false;
  bool coalesce = false;              // plan: apply the batch step over all events
  bool no_auto_backfill = false;      // run: leave new and changed mappings to `backfill`
  bool watch_mappings = false;        // run: reload when a mapping file changes
  bool ha = false;                    // run: share the namespaces with other instances by leases
  bool web_enable_lifecycle = false;  // run: serve POST /-/reload (as Prometheus guards it)
  std::string web_config_file;        // run: TLS and basic auth for the HTTP port ("" = none)
  std::string instance_id;            // run: --instance-id ("" = hostname:pid)
  int lease_ttl_ms = 10000;           // run: --lease-ttl-ms
  int linger_ms = 5;                  // run: --linger-ms
  int checkpoint_interval_ms = 1000;  // run: --checkpoint-interval-ms
  int headroom_interval_ms = 30000;   // run: --headroom-interval-ms (0: no history-headroom probe)
  // run: --verify-interval (0: no background verify), in milliseconds
  std::int64_t verify_interval_ms = 0;
  bool verify_no_repair = false;  // run: --verify-no-repair
  int timeout_s = 30;   // backfill, verify, status: --timeout, how long the server may be away
  int max_time_s = 60;  // cost: --max-time, per aggregation
  int sample_size = 1000000;  // cost: --sample-size, documents one measurement reads
  std::string metrics_url;    // cost: --metrics-url, a running denormd's /metrics
  int sample_seconds = 10;    // cost: --sample-seconds, the traffic window
  std::string log_format = "text";
  std::string log_level = "info";
};

// argv[0] excluded. `env_uri` is DENORMD_URI (empty when unset). Errors are usage errors.
expected<options> parse_options(const std::vector<std::string>& args, const std::string& env_uri);

// A duration as --verify-interval takes it: whole numbers with units, largest first ("90s",
// "10m", "1h30m"; units ms, s, m, h, d), in milliseconds; nullopt when it is not one.
std::optional<std::int64_t> parse_duration_ms(const std::string& text);

// --partitions as given, by namespace ("db.coll" -> N); an error names the bad one. N is 2 to
// max_partitions; a namespace given twice must have the same N.
inline constexpr int max_partitions = 64;
expected<std::map<std::string, int>> parse_partitions(const std::vector<std::string>& given);

// Help text for a command ("" for the overview).
std::string help_text(const std::string& topic);

// Where denormd keeps its own state (checkpoints, dead letters, backfill progress): --db,
// else the URI's database (`uri_database`, "" when it names none), else "denormd".
std::string meta_database(const options& o, const std::string& uri_database);

}  // namespace denormd::app
