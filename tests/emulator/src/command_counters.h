#pragma once
// Per-command counters that serverStatus reports as metrics.commands.<name>.{total,failed},
// as MongoDB does; benchmarks read them to count the write commands a client issued.
// Lifecycle: owned by server_state. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "bson/value.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

class command_counters {
 public:
  void count(const std::string& command, bool failed);
  // {<name>: {failed: long, total: long}, ...} in name order.
  bson::document to_document() const;

 private:
  struct counts {
    std::int64_t total = 0;
    std::int64_t failed = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, counts, std::less<>> counts_;
};

}  // namespace mongo_emulator
