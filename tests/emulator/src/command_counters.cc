#include "command_counters.h"

namespace mongo_emulator {

void command_counters::count(const std::string& command, bool failed) {
  std::lock_guard lock(mutex_);
  auto& c = counts_[command];
  ++c.total;
  if (failed) ++c.failed;
}

bson::document command_counters::to_document() const {
  std::lock_guard lock(mutex_);
  bson::document out;
  for (const auto& [name, c] : counts_)
    out.append(name, bson::document{{"failed", c.failed}, {"total", c.total}});
  return out;
}

}  // namespace mongo_emulator
