#pragma once
// MongoDB's `failCommand` fail point, configured through `configureFailPoint` on admin:
// modes alwaysOn / off / {times: N} / {skip: N} / {activationProbability: p}, and data
// {failCommands, errorCode, errorLabels, closeConnection, blockConnection + blockTimeMS,
// writeConcernError, appName}. Thread-safe.

#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// What to do to one command the fail point caught.
struct fail_action {
  bool close_connection = false;
  std::chrono::milliseconds block{0};
  std::optional<int> error_code;
  std::optional<bson::array> error_labels;  // when given, replaces the labels MongoDB computes
  std::optional<bson::document> write_concern_error;
};

class fail_point {
 public:
  // Handles `configureFailPoint`; the reply is `{count: <times entered so far>}`.
  denormd::expected<bson::document> configure(const bson::document& command);
  // Consumes one activation if `command` (from a client named `app_name`) is targeted.
  std::optional<fail_action> check(std::string_view command, std::string_view app_name);

 private:
  enum class mode { off, always_on, times, skip, probability };

  std::mutex mutex_;
  mode mode_ = mode::off;
  std::int64_t remaining_ = 0;  // times: activations left; skip: matches still to let through
  double probability_ = 0;
  std::int64_t entered_ = 0;
  std::vector<std::string> commands_;
  std::string app_name_;
  fail_action action_;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace mongo_emulator
