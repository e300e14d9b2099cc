#pragma once
// The sessions this instance's fenced transactions ran on, most recent first, which its
// heartbeat publishes: a new owner taking a lease from an instance that is gone ends that
// instance's transactions (killSessions) instead of waiting for the server to abort one it
// left open, killed or paused inside it (docs/architecture.md, "High availability"). Lives as
// long as the daemon; thread-safe.

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "bson/value.h"

namespace denormd::lease {

class session_log {
 public:
  // The driver reuses pooled sessions, so the distinct ones are few (one per concurrent
  // transaction); more than this many are older than any transaction still open.
  static constexpr std::size_t max_sessions = 64;

  // `lsid` ({id: UUID}) began a transaction.
  void note(const bson::document& lsid);
  // The sessions noted, most recent first, at most max_sessions.
  std::vector<bson::document> recent() const;

 private:
  mutable std::mutex mutex_;
  std::deque<bson::document> sessions_;
};

}  // namespace denormd::lease
