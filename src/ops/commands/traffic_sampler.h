#pragma once
// `denormd cost`, the traffic side (docs/cost.md): two readings some seconds apart of a
// running denormd's /metrics (denormd_fanout: the changes that made writes for each mapping,
// and the dependents they wrote) and of the server's `top` (reads of each target, writes to
// each source), and what they say per mapping: changes per second, dependents written per
// change (write amplification), target reads per second and the read/update ratio. Either
// side may be unavailable (no --metrics-url, the server refuses `top`): the figures it gives
// are then left out, with why.
//
// Lifecycle: construct, read() as often as wanted from one thread; the connection must outlive
// it. The parsing and the arithmetic are pure functions.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "mapping/mapping.h"
#include "mongo/connection.h"

namespace denormd::ops {

// One sample of the Prometheus text exposition format.
struct metric_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
// The samples of a /metrics page (comments and blank lines skipped); the error names the line.
expected<std::vector<metric_sample>> parse_prometheus_text(std::string_view text);

// denormd_fanout's sum and count of one mapping.
struct fanout_totals {
  double sum = 0;
  double count = 0;
};
std::map<std::string, fanout_totals> fanout_by_mapping(const std::vector<metric_sample>& samples);

// What `top` counts of one namespace (operations, not their times).
struct top_counts {
  std::int64_t queries = 0;
  std::int64_t getmore = 0;
  std::int64_t insert = 0;
  std::int64_t update = 0;
  std::int64_t remove = 0;
};
// `top`'s reply ({totals: {"db.coll": {queries: {time, count}, ...}}}) by namespace.
std::map<std::string, top_counts> parse_top(const bson::document& reply);

struct traffic_reading {
  std::int64_t at_ms = 0;  // steady clock
  std::optional<std::map<std::string, fanout_totals>> fanout;
  std::string metrics_error;  // why `fanout` is missing ("" with no --metrics-url)
  std::optional<std::map<std::string, top_counts>> top;
  std::string top_error;  // why `top` is missing
};

struct traffic_figures {
  double window_seconds = 0;
  std::optional<double> changes_per_second;
  std::string changes_from;  // what counted them
  std::optional<double> amplification;
  std::string amplification_from;
  std::optional<double> reads_per_second;
  std::optional<double> read_update_ratio;  // reads per change
  std::vector<std::string> missing;         // why a figure is left out
};

// The traffic of `m` between two readings. `data_amplification`: the dependents a change
// writes as the data says (copy: the mean fan-out), used where denormd's metrics do not say.
traffic_figures traffic_of(const mapping::mapping& m, const traffic_reading& before,
                           const traffic_reading& after, std::optional<double> data_amplification);

// Fetches a /metrics page: its text, or why not.
using metrics_fetch = std::function<expected<std::string>()>;

class traffic_sampler {
 public:
  // `fetch` empty: no denormd to ask.
  traffic_sampler(mongo::connection& conn, metrics_fetch fetch);

  traffic_reading read();
  // Whether a reading can say anything: a metrics page or `top` answered.
  static bool useful(const traffic_reading& r) { return r.fanout || r.top; }

 private:
  mongo::connection& conn_;
  metrics_fetch fetch_;
};

}  // namespace denormd::ops
