#pragma once
// Per-collection usage as MongoDB's Top keeps it for the `top` command
// (src/mongo/db/stats/top.cpp): per namespace, the time in microseconds and the count of every
// operation (total), of those that held the read or the write lock, and by the operation's
// LogicalOp: queries (find), getmore, insert, update, remove, commands (any other command that
// takes the collection's lock). Lifecycle: one per server (server_state). Thread-safe (a mutex).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "bson/value.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

class top_counters {
 public:
  // Which counter besides total and the lock's an operation adds to (LogicalOp).
  enum class bucket : std::uint8_t { queries, getmore, insert, update, remove, commands };
  enum class lock_kind : std::uint8_t { read, write };

  // Records `count` operations on `ns` that took `micros` in all.
  void record(const std::string& ns, bucket b, lock_kind lock, std::int64_t micros,
              std::int64_t count = 1);
  // Classifies a command that succeeded (ok: 1) as MongoDB's commands record themselves and
  // records it: find, getMore, insert (one per command), update and delete (one per statement,
  // the command's time shared among them), findAndModify, aggregate, count, distinct,
  // listIndexes, collStats, createIndexes and dropIndexes; `drop`, `renameCollection` and
  // `dropDatabase` remove the entries of what they dropped (Top::collectionDropped).
  void record_command(std::string_view command, const std::string& db, const bson::document& body,
                      std::chrono::steady_clock::duration elapsed);
  // {note: "all times in microseconds", "<db.coll>": {total: {time, count}, readLock, writeLock,
  // queries, getmore, insert, update, remove, commands}, ...}, namespaces in byte order.
  bson::document to_document() const;

 private:
  struct usage {
    std::int64_t time = 0;
    std::int64_t count = 0;
    void add(std::int64_t micros, std::int64_t n) {
      time += micros;
      count += n;
    }
  };
  struct collection_usage {
    usage total, read_lock, write_lock, queries, getmore, insert, update, remove, commands;
  };

  void collection_dropped(const std::string& ns);
  void database_dropped(std::string_view db);

  mutable std::mutex mutex_;
  std::map<std::string, collection_usage, std::less<>> usage_;
};

}  // namespace mongo_emulator
