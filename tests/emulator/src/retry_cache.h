#pragma once
// Results of retryable writes by (lsid.id, txnNumber): a retry gets the stored reply instead of
// running again. Bounded; the oldest results are forgotten first. Thread-safe.

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "bson/value.h"

namespace mongo_emulator {

class retry_cache {
 public:
  // The cache key of a command, or nullopt when it is not a retryable write.
  static std::optional<std::string> key_of(const denormd::bson::document& command);

  std::optional<denormd::bson::document> find(const std::string& key) const;
  void store(const std::string& key, denormd::bson::document reply);

 private:
  static constexpr std::size_t max_entries = 100000;
  mutable std::mutex mutex_;
  std::map<std::string, denormd::bson::document> replies_;
  std::deque<std::string> order_;
};

}  // namespace mongo_emulator
