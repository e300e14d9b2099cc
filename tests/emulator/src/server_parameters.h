#pragma once
// The server parameters getParameter and setParameter know: MongoDB's node ServerParameterSet
// (src/mongo/db/commands/parameters.cpp), limited to the knobs the emulator has.
// - featureCompatibilityVersion: {version: "6.0"}, read-only (setParameter refuses it).
// - transactionLifetimeLimitSeconds: int, >= 1, default 60 (--transaction-lifetime-limit-seconds);
//   storage enforces it, so a change applies to the next expiry check.
// - internalChangeStreamRespectsReadPreference: bool, default false (--setParameter): what a
//   change stream's getMore does after a step-down (read_commands.cc).
// Lifecycle: one per server (server_state), outlives every connection. Thread-safe (atomics).

#include <atomic>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

class storage;

class server_parameters {
 public:
  server_parameters(storage& store, bool change_streams_respect_read_preference)
      : store_(store),
        change_streams_respect_read_preference_(change_streams_respect_read_preference) {}

  // {getParameter: 1 | "*" | {showDetails, allParameters}, <name>: <anything>, ...}: the fields
  // of the reply (without ok), in name order; 72 "no option found to get" when none matched.
  denormd::expected<bson::document> get(const bson::document& body) const;
  // {setParameter: <anything>, <name>: <value>, ...}: checks every name first (72 unknown, 20
  // not settable at run time, 72 twice), then sets them in name order; the reply holds `was`,
  // the first one's previous value, as MongoDB's does.
  denormd::expected<bson::document> set(const bson::document& body);

  bool change_streams_respect_read_preference() const {
    return change_streams_respect_read_preference_.load();
  }

 private:
  struct parameter;
  static const parameter* find(std::string_view name);

  storage& store_;
  std::atomic<bool> change_streams_respect_read_preference_;
};

}  // namespace mongo_emulator
