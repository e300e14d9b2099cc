#include "lease/session_log.h"

#include <algorithm>

#include "bson/identical.h"

namespace denormd::lease {

void session_log::note(const bson::document& lsid) {
  const bson::value* id = lsid.get("id");
  if (id == nullptr) return;
  const bson::document entry{{"id", *id}};
  std::lock_guard lock(mutex_);
  auto same = std::find_if(sessions_.begin(), sessions_.end(),
                           [&](const bson::document& d) { return bson::identical(d, entry); });
  if (same != sessions_.end()) sessions_.erase(same);
  sessions_.push_front(entry);
  if (sessions_.size() > max_sessions) sessions_.pop_back();
}

std::vector<bson::document> session_log::recent() const {
  std::lock_guard lock(mutex_);
  return {sessions_.begin(), sessions_.end()};
}

}  // namespace denormd::lease
