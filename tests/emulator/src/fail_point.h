#pragma once
// MongoDB's command fail points, configured through `configureFailPoint` on admin: modes
// alwaysOn / off / {times: N} / {skip: N} / {activationProbability: p}.
// - `failCommand`, data {failCommands, errorCode, errorLabels, closeConnection,
//   blockConnection + blockTimeMS, writeConcernError, appName, namespace}: acts before the
//   command runs.
// - `failGetMoreAfterCursorCheckout`, data {errorCode (default 1), appName}: fails a getMore
//   once its cursor is checked out, so the server labels the error as it would a real one.
// Thread-safe.

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
  static constexpr std::string_view fail_command = "failCommand";
  static constexpr std::string_view fail_get_more = "failGetMoreAfterCursorCheckout";

  explicit fail_point(std::string_view name) : name_(name) {}
  std::string_view name() const { return name_; }
  // Handles `configureFailPoint`; the reply is `{count: <times entered so far>}`.
  denormd::expected<bson::document> configure(const bson::document& command);
  // Consumes one activation if `command` (from a client named `app_name`, on namespace `ns`:
  // "db.coll", or "db.$cmd" for a command that names no collection) is targeted.
  std::optional<fail_action> check(std::string_view command, std::string_view app_name,
                                   std::string_view ns = {});

 private:
  enum class mode { off, always_on, times, skip, probability };

  const std::string_view name_;
  std::mutex mutex_;
  mode mode_ = mode::off;
  std::int64_t remaining_ = 0;  // times: activations left; skip: matches still to let through
  double probability_ = 0;
  std::int64_t entered_ = 0;
  std::vector<std::string> commands_;
  std::string app_name_;
  std::string namespace_;  // "" for any
  fail_action action_;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace mongo_emulator
