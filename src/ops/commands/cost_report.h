#pragma once
// What `denormd cost` found, per mapping (the data side, cost_probe.h; the traffic side,
// traffic_sampler.h), the one-line verdict in plain words with the numbers behind it, and the
// two renderings (text for people, one JSON object for scripts). Plain values; pure.

#include <optional>
#include <string>
#include <vector>

#include "ops/commands/cost_probe.h"
#include "ops/commands/traffic_sampler.h"

namespace denormd::ops {

struct mapping_cost {
  std::string mapping;
  std::string kind;
  std::string source;  // namespaces, "shop.customers"
  std::string target;
  data_cost data;
  std::optional<traffic_figures> traffic;  // nullopt: not measured (the reason in traffic_note)
  std::string traffic_note;
  std::string verdict;
};

// The dependents one change of a source writes, as the data says: copy, the mean fan-out
// (scaled when sampled); recent and aggregate, one parent. nullopt when the fan-out failed.
std::optional<double> data_amplification(const mapping_cost& c);

// "worth it: ...", "borderline: ...", "think again: ..." or "no verdict: ...", with the numbers.
std::string verdict(const mapping_cost& c);

struct cost_report {
  std::vector<mapping_cost> mappings;
  cost_bounds bounds;
};

std::string to_text(const cost_report& r);
std::string to_json(const cost_report& r);

// 1,536 -> "1.5 KiB".
std::string format_bytes(double bytes);

}  // namespace denormd::ops
