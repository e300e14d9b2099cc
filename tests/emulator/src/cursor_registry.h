#pragma once
// Open cursors by id. A getMore pins its cursor for the duration of one batch, so a cursor is
// never used by two commands at once; cursors idle for ten minutes are reaped (unless opened
// with noCursorTimeout), as in MongoDB.
// Thread-safe.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "change_stream.h"
#include "query_cursor.h"

namespace mongo_emulator {

struct cursor {
  std::string ns;
  std::unique_ptr<query_cursor> query;  // one of these two is set
  std::unique_ptr<change_stream> stream;
  std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();
  bool no_timeout = false;  // find's noCursorTimeout: never reaped
  bool pinned = false;
  bool killed = false;        // killCursors while pinned: removed when the pin ends
  bool primary_read = false;  // opened with read preference primary (none given)
};

class cursor_registry {
 public:
  cursor_registry();

  // Registers a cursor and returns its id (positive, never 0).
  std::int64_t add(std::unique_ptr<cursor> c);
  // Exclusive use of a cursor; nullptr when it does not exist or is in use.
  cursor* pin(std::int64_t id);
  // Ends a pin; `finished` removes the cursor.
  void unpin(std::int64_t id, bool finished);
  // Removes a cursor (once its current getMore ends, if pinned); false when unknown.
  bool kill(std::int64_t id);
  std::size_t size() const;
  bool is_change_stream(std::int64_t id) const;

 private:
  void reap_idle();

  mutable std::mutex mutex_;
  std::int64_t next_id_;
  std::map<std::int64_t, std::unique_ptr<cursor>> cursors_;
};

}  // namespace mongo_emulator
