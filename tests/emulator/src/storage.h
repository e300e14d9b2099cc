#pragma once
// All databases, their collections, the cluster clock and the change history. One
// reader/writer lock guards everything; document writes go through storage so that every change
// gets a unique, increasing clusterTime and an oplog entry. Waiting for changes (await-data
// getMore) happens outside the lock through change_notifier.
// Thread-safe through the lock objects below; the accessors require holding one.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "change_notifier.h"
#include "collection.h"
#include "common/expected.h"
#include "oplog.h"

namespace mongo_emulator {

class storage {
 public:
  explicit storage(std::size_t oplog_max_events);

  // Exclusive access; on release, wakes change-stream waiters if changes were recorded.
  class write_lock {
   public:
    explicit write_lock(storage& s);
    ~write_lock();
    write_lock(const write_lock&) = delete;
    write_lock& operator=(const write_lock&) = delete;

   private:
    storage& storage_;
    std::unique_lock<std::shared_mutex> lock_;
    std::uint64_t changes_before_;
  };
  write_lock lock_for_write() { return write_lock(*this); }
  std::shared_lock<std::shared_mutex> lock_for_read() const { return std::shared_lock(mutex_); }

  // --- namespaces (under a lock) ---
  collection* find(std::string_view db, std::string_view coll);
  const collection* find(std::string_view db, std::string_view coll) const;
  // The collection, created implicitly (as inserts and upserts do) when missing; a creation
  // records `create`.
  collection& obtain(std::string_view db, std::string_view coll);
  // Explicit creation with the collection's stored `options`, recorded as `create`; 48
  // NamespaceExists when it exists.
  denormd::expected<collection*> create(std::string_view db, std::string_view coll,
                                        const bson::document& options = {});
  // Records a DDL change of `c` that only expanded change streams show (create_indexes,
  // drop_indexes, modify), with its operationDescription.
  void record_ddl(op_type op, const collection& c, bson::document description,
                  std::optional<bson::document> state_before = std::nullopt);
  // Records `drop`; 26 NamespaceNotFound when missing.
  denormd::status drop(std::string_view db, std::string_view coll);
  // Records a `drop` per collection, then `dropDatabase` (nothing when the database is empty).
  void drop_database(std::string_view db);
  denormd::status rename(std::string_view from_db, std::string_view from_coll,
                         std::string_view to_db, std::string_view to_coll, bool drop_target);
  std::vector<std::string> database_names() const;
  std::vector<const collection*> collections(std::string_view db) const;

  // --- document writes that record change events (under the write lock) ---
  denormd::expected<std::uint64_t> insert(collection& c, doc_ptr doc);
  denormd::status update(collection& c, std::uint64_t record, doc_ptr doc,
                         bson::document update_description);
  denormd::status replace(collection& c, std::uint64_t record, doc_ptr doc);
  void remove(collection& c, std::uint64_t record);

  // --- change history ---
  const oplog& history() const { return oplog_; }
  // The newest clusterTime handed out; readable without the lock.
  bson::timestamp cluster_time() const;
  // Advances the clock without a change (like MongoDB's periodic no-op writer). Change streams
  // opened "now" start at such a tick. Lock-free.
  bson::timestamp tick();
  // Number of changes recorded so far (under a lock); pairs with notifier().park().
  std::uint64_t change_count() const { return change_count_; }
  change_notifier& notifier() { return notifier_; }

 private:
  using database = std::map<std::string, std::unique_ptr<collection>, std::less<>>;

  void record(oplog_entry entry);
  collection& make(std::string_view db, std::string_view coll, const bson::document& options);
  void record_document_change(op_type op, const collection& c, const bson::value& id,
                              doc_ptr full_document, doc_ptr pre_image,
                              bson::document update_description);

  mutable std::shared_mutex mutex_;
  std::map<std::string, database, std::less<>> databases_;
  oplog oplog_;
  std::atomic<std::uint64_t> clock_{0};  // timestamp packed as t << 32 | i
  std::uint64_t change_count_ = 0;
  changed_namespaces pending_;  // changes of the current write lock, announced on release
  change_notifier notifier_;
};

}  // namespace mongo_emulator
