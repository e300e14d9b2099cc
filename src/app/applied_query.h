#pragma once
// The query of GET /applied (docs/running.md, "Waiting for the copies"): `after=T[:I]`, the
// operation time to wait for, optional `mapping=NAME` and `timeout=SECONDS` (at most 60).

#include <chrono>
#include <string>
#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace denormd::app {

struct applied_query {
  bson::timestamp after;
  std::string mapping;  // "" = every mapping
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

// `query` is still %-encoded. The error names the parameter and the value.
expected<applied_query> parse_applied_query(std::string_view query);

}  // namespace denormd::app
