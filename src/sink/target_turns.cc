#include "sink/target_turns.h"

#include <algorithm>

namespace denormd::sink {

target_turns::held target_turns::take(std::vector<std::string> targets) {
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  std::vector<std::mutex*> order;
  {
    std::lock_guard lock(mutex_);
    for (const auto& t : targets) {
      auto& m = turns_[t];
      if (!m) m = std::make_unique<std::mutex>();
      order.push_back(m.get());
    }
  }
  held out;
  for (auto* m : order)
    out.locks_.emplace_back(*m);
  return out;
}

}  // namespace denormd::sink
