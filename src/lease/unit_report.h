#pragma once
// With --ha, what an instance says about the units it holds, written with its heartbeat in
// `denormd_instances` (field `report`), so that any instance's status shows the whole cluster,
// each unit as its holder last saw it (docs/architecture.md, "One view of the cluster"). Plain
// values; reading is lenient (a field another version does not write is left at its default,
// one of the wrong type too), because instances of different versions share the collection.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bson/value.h"

namespace denormd::lease {

struct unit_report {
  std::string unit;
  bool streaming = false;
  std::string state;  // "streaming", or why not, in /readyz's words
  double lag_seconds = 0;
  double checkpoint_age_seconds = 0;
  std::int64_t applied_events = 0;
  std::optional<bson::timestamp> applied_through;  // every change before it is applied
  double events_per_second = 0;
  std::int64_t last_event_ms = 0;  // wall time of the last applied event (0: none yet)
  std::int64_t errors = 0;         // failed stream reads and write attempts since it started
  std::vector<std::pair<std::int64_t, double>> lag;  // (ms, seconds), oldest first
};

struct instance_report {
  std::string version;
  std::int64_t started_ms = 0;
  std::vector<unit_report> units;
};

bson::document to_document(const instance_report& r);
instance_report instance_report_of(const bson::document& d);

// A row of `denormd_instances` as read, its times judged by the server's clock.
struct instance_row {
  std::string name;
  bool live = false;               // its heartbeat has not expired
  std::int64_t seen_ms = 0;        // the server's time of its last heartbeat
  std::int64_t age_ms = 0;         // since then, by the server's clock when read
  std::vector<std::string> holds;  // the units it said it holds
  std::optional<instance_report> report;
};

// The report of `unit` from the live row of `holder` (the lease's owner); with holder "", from
// any live row reporting it. Null when there is none; `from` is then left as it was.
const unit_report* report_of(const std::vector<instance_row>& rows, const std::string& unit,
                             const std::string& holder, const instance_row** from = nullptr);

}  // namespace denormd::lease
