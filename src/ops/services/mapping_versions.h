#pragma once
// Mapping versions: which definition of each mapping denormd runs, kept in the state database
// as `<meta_db>.denormd_mappings` ({_id: name, fingerprint, definition (the file as loaded),
// file, reads, activeSince, removed, autoBackfill}; a removed one may keep `stoppedAt` from a
// denormd before stop points were kept with the checkpoints, read once at start). The daemon
// records its mappings at start: a new or changed fingerprint becomes active then, an unchanged one
// keeps its time, and a stored mapping that is no longer loaded is marked removed (its record is
// kept). `status` lists them with the state of their backfill for the running definition (from
// denormd_backfill), so a changed mapping whose documents still have the old shape shows as stale.
// Stateless functions; the connection is the caller's.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mapping/reload_policy.h"
#include "mongo/connection.h"
#include "ops/commands/backfiller.h"

namespace denormd::ops {

using ops::mappings_collection;

enum class backfill_state {
  done,     // a backfill of this definition finished
  running,  // a backfill of this definition started and has not finished (or was stopped)
  pending,  // never backfilled, or backfilled under another definition: documents may be stale
  disabled  // pending, and the daemon runs with --no-auto-backfill: `denormd backfill` must
};

using mapping::stop_point;

struct mapping_version {
  std::string name;
  std::string fingerprint;
  // How many times its definition changed (0 for the first): a backfill counts only for the
  // activation it ran for, so a definition put back after another ran (A, B, A) is stale.
  std::int64_t activation = 0;
  std::int64_t active_since_ms = 0;
  bool removed = false;
  backfill_state backfill = backfill_state::pending;
  std::int64_t backfill_documents = 0;  // walked so far by the backfill of this definition
  std::int64_t backfill_total = 0;      // documents its collection held when it began (0: unknown)
};

// Records `mappings` as the ones running since `now_ms` (a changed one gets the next
// activation), and marks the others removed (where
// they stopped is kept with the checkpoints: mapping/reload_policy.h). `auto_backfill`: whether
// the daemon backfills them (status says "disabled" for a stale one otherwise).
mongo::status record_mappings(mongo::connection& conn, const std::string& meta_db,
                              const std::vector<mapping::mapping>& mappings, std::int64_t now_ms,
                              bool auto_backfill);

// One stored record, as much as the daemon needs at start to know which mappings went away
// and where they stopped.
using mapping::recorded_mapping;

mongo::result<std::vector<recorded_mapping>> read_recorded(mongo::connection& conn,
                                                           const std::string& meta_db);
// Removes the `stoppedAt` an earlier denormd recorded for mapping `name`, once its stop points
// are kept with the checkpoints.
mongo::status forget_stopped_at(mongo::connection& conn, const std::string& meta_db,
                                const std::string& name);

// The recorded mappings, by name, with the state of their backfill.
mongo::result<std::vector<mapping_version>> read_versions(mongo::connection& conn,
                                                          const std::string& meta_db);

std::string_view backfill_state_name(backfill_state s);
std::string to_text(const std::vector<mapping_version>& versions);
bson::array to_bson_array(const std::vector<mapping_version>& versions);

}  // namespace denormd::ops
