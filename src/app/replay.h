#pragma once
// Where `run` starts when told to replay: --resume-after TOKEN (Extended JSON of a resume
// token, e.g. {"_data":"8265..."}) or --start-at TIME (ISO-8601 like 2024-05-01T10:00:00Z, or
// a cluster timestamp "t:i"). Pure parsing.

#include <optional>

#include "app/options.h"
#include "bson/value.h"
#include "common/expected.h"

namespace denormd::app {

struct replay_point {
  std::optional<bson::document> resume_after;
  std::optional<bson::timestamp> start_at;
};

expected<replay_point> parse_replay(const options& o);
expected<bson::timestamp> parse_start_at(const std::string& text);

}  // namespace denormd::app
