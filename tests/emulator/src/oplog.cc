#include "oplog.h"

#include <algorithm>

namespace mongo_emulator {

void oplog::append(oplog_entry entry) {
  entries_.push_back(std::move(entry));
  while (entries_.size() > max_events_) {
    newest_dropped_ = entries_.front().ts;
    entries_.pop_front();
    truncated_ = true;
  }
}

std::size_t oplog::lower_bound(bson::timestamp ts) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), ts,
                             [](const oplog_entry& e, bson::timestamp t) { return e.ts < t; });
  return static_cast<std::size_t>(it - entries_.begin());
}

const oplog_entry* oplog::find(bson::timestamp ts) const {
  const std::size_t i = lower_bound(ts);
  if (i < entries_.size() && entries_[i].ts == ts) return &entries_[i];
  return nullptr;
}

bool oplog::history_lost(bson::timestamp ts, bool inclusive) const {
  return truncated_ && (inclusive ? ts <= newest_dropped_ : ts < newest_dropped_);
}

}  // namespace mongo_emulator
