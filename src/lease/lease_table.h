#pragma once
// What the coordinator reads and writes the lease table and the heartbeats through.
// lease_store is the MongoDB one; tests use an in-memory one. Implementations are thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "lease/lease_machine.h"
#include "mongo/driver_error.h"

namespace denormd::lease {

// A lease row with its expiry, as `denormd status` shows it.
struct lease_entry {
  lease_row row;
  std::int64_t expires_ms = 0;    // server time
  std::int64_t remaining_ms = 0;  // until it expires, by the server's clock when read
};

class lease_table {
 public:
  virtual ~lease_table() = default;

  // Takes `unit` for `me` when it is free, released, expired or already `me`'s, with a new
  // epoch (one more than the last); nullopt when another instance holds it.
  virtual mongo::result<std::optional<std::int64_t>> acquire(const std::string& unit,
                                                             const std::string& me) = 0;
  // Extends the lease by the TTL from now; false when it is no longer `me`'s at `epoch`.
  virtual mongo::result<bool> renew(const std::string& unit, const std::string& me,
                                    std::int64_t epoch) = 0;
  // Sets the epoch of `me`'s lease from `from` to `to`; false when it is not `me`'s at `from`.
  virtual mongo::result<bool> raise_epoch(const std::string& unit, const std::string& me,
                                          std::int64_t from, std::int64_t to) = 0;
  // Gives the lease up (owner "", expired) if it is still `me`'s at `epoch`.
  virtual mongo::status release(const std::string& unit, const std::string& me,
                                std::int64_t epoch) = 0;
  // `me` is live for another TTL and holds `units`; `report` is what it says of them
  // (unit_report.h), kept as given.
  virtual mongo::status heartbeat(const std::string& me, const std::vector<std::string>& units,
                                  const bson::document& report) = 0;
  // `me` is gone (a clean stop): peers see it leave at once instead of after a TTL.
  virtual mongo::status leave(const std::string& me) = 0;
  // The instances whose heartbeat has not expired, by name.
  virtual mongo::result<std::vector<std::string>> live() = 0;
  // Every lease row, expiry judged by the server now.
  virtual mongo::result<std::vector<lease_entry>> table() = 0;

 protected:
  lease_table() = default;
  lease_table(const lease_table&) = default;
  lease_table& operator=(const lease_table&) = default;
};

}  // namespace denormd::lease
