#pragma once
// All databases, their collections, the cluster clock and the change history. One
// reader/writer lock guards everything; document writes go through storage so that every change
// gets a unique, increasing clusterTime and an oplog entry. Waiting for changes (await-data
// getMore) happens outside the lock through change_notifier.
// Thread-safe through the lock objects below; the accessors require holding one.

#include <atomic>
#include <chrono>
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
#include "transaction.h"

namespace mongo_emulator {

class storage {
 public:
  storage(std::size_t oplog_max_events, std::chrono::seconds transaction_lifetime);

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
  // The stored collection itself, for a transaction's view to keep (nullptr when missing).
  std::shared_ptr<const collection> find_shared(std::string_view db, std::string_view coll) const;
  // The collection, created implicitly (as inserts and upserts do) when missing; a creation
  // records `create`.
  collection& obtain(std::string_view db, std::string_view coll);
  // The same as transaction `txn` sees them (its private views) when `txn` is not null.
  collection* find(std::string_view db, std::string_view coll, transaction* txn);
  collection& obtain(std::string_view db, std::string_view coll, transaction* txn);
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
  // On a transaction's view (collection::owner()) they record the write in the transaction
  // instead, after checking for a write conflict (112): the document changed since the
  // transaction's snapshot, or another open transaction wrote it. On a stored collection they
  // fail with 112 when an open transaction wrote the document; callers wait instead (see
  // written_by_transaction) as MongoDB's non-transactional writes do.
  denormd::expected<std::uint64_t> insert(collection& c, doc_ptr doc);
  denormd::status update(collection& c, std::uint64_t record, doc_ptr doc,
                         bson::document update_description);
  denormd::status replace(collection& c, std::uint64_t record, doc_ptr doc);
  denormd::status remove(collection& c, std::uint64_t record);

  // --- multi-document transactions (under the write lock) ---
  // The transaction a statement with `autocommit: false` runs in: a new one with
  // `startTransaction` (aborting an older one of the session), otherwise the session's
  // transaction `number`, which must be in progress (MongoDB's errors: 225, 117, 251, 256).
  // The caller keeps the transaction alive while its statement runs, though another thread may
  // end it as soon as the lock is released (transaction::ended).
  denormd::expected<std::shared_ptr<transaction>> begin_or_continue(const bson::document& lsid,
                                                                    std::int64_t number,
                                                                    bool start);
  // commitTransaction: its changes get one new clusterTime and are numbered in order. Committing
  // a committed transaction again succeeds; an aborted or unknown one fails with 251.
  denormd::status commit_transaction(const bson::document& lsid, std::int64_t number);
  // abortTransaction (also after a failing statement): the transaction's writes are dropped.
  denormd::status abort_transaction(const bson::document& lsid, std::int64_t number);
  // Whether an open transaction other than the view's owner wrote document `id` of `c`: a
  // write outside that transaction has to wait until it ends.
  bool written_by_transaction(const collection& c, const bson::value& id) const;
  // Aborts the open transactions older than transactionLifetimeLimitSeconds, as MongoDB's
  // reaper does; run when a write would wait for one or conflict with one (a client killed in
  // a transaction leaves it open until then).
  void abort_expired_transactions();
  // transactionLifetimeLimitSeconds, which setParameter changes at run time. Lock-free.
  std::chrono::seconds transaction_lifetime() const {
    return std::chrono::seconds(transaction_lifetime_s_.load());
  }
  void set_transaction_lifetime(std::chrono::seconds s) {
    transaction_lifetime_s_.store(s.count());
  }
  // Aborts every open transaction, as a step-down does (invalidateSessionsForStepdown).
  void abort_all_transactions();
  // killSessions: aborts the open transaction of each session in `lsids` ({id: UUID}); its
  // next statement or commit finds it aborted. Sessions that have none are left as they are.
  void kill_sessions(const std::vector<bson::document>& lsids);

  // --- change history ---
  const oplog& history() const { return oplog_; }
  // replSetResizeOplog (under the write lock): see oplog::resize.
  void resize_history(std::size_t max_events, double min_retention_hours) {
    oplog_.resize(max_events, min_retention_hours);
  }
  // The newest clusterTime handed out; readable without the lock.
  bson::timestamp cluster_time() const;
  // Advances the clock without a change (like MongoDB's periodic no-op writer). Change streams
  // opened "now" start at such a tick. Lock-free.
  bson::timestamp tick();
  // Documents written so far, as serverStatus.metrics.document counts them (inserted,
  // updated (replacements included), deleted). Readable without the lock.
  struct document_counts {
    std::uint64_t inserted = 0;
    std::uint64_t updated = 0;
    std::uint64_t deleted = 0;
  };
  document_counts documents_written() const {
    return {inserted_.load(), updated_.load(), deleted_.load()};
  }
  // Number of changes recorded so far (under a lock); pairs with notifier().park().
  std::uint64_t change_count() const { return change_count_; }
  change_notifier& notifier() { return notifier_; }

 private:
  // Shared: a transaction's view keeps the collection it reads, even once it is dropped.
  using database = std::map<std::string, std::shared_ptr<collection>, std::less<>>;

  struct session {
    enum class state : std::uint8_t { none, in_progress, committed, aborted };
    std::int64_t number = -1;
    state st = state::none;
    std::shared_ptr<transaction> txn;  // while in progress; shared with its running statement
  };

  void record(oplog_entry entry);
  // Claims document `id` of `c` for its owner's write: 112 on a conflict.
  denormd::status claim(const collection& c, const bson::value& id);
  // A write to the stored collection `c`: 112 while a transaction holds `id`; otherwise tells
  // the open transactions the document's version before the write.
  denormd::status check_unclaimed(const collection& c, const bson::value& id) const;
  // Tells the open transactions that document `id` of `c`, which was `before` (none: it did
  // not exist) at `record`, has changed.
  void note_change(const collection& c, const bson::value& id, const doc_ptr& before,
                   std::optional<std::uint64_t> record);
  void end_transaction(session& s, session::state outcome);
  void apply(const transaction::op& o);
  collection& make(std::string_view db, std::string_view coll, const bson::document& options);
  void record_document_change(op_type op, const collection& c, const bson::value& id,
                              doc_ptr full_document, doc_ptr pre_image,
                              bson::document update_description);

  mutable std::shared_mutex mutex_;
  std::map<std::string, database, std::less<>> databases_;
  std::atomic<std::int64_t> transaction_lifetime_s_;
  oplog oplog_;
  std::atomic<std::uint64_t> clock_{0};  // timestamp packed as t << 32 | i
  std::uint64_t change_count_ = 0;
  std::atomic<std::uint64_t> inserted_{0};
  std::atomic<std::uint64_t> updated_{0};
  std::atomic<std::uint64_t> deleted_{0};
  changed_namespaces pending_;  // changes of the current write lock, announced on release
  change_notifier notifier_;
  std::map<std::string, session, std::less<>> sessions_;  // by the lsid's id bytes
  std::vector<transaction*> open_;
  // The open transaction that wrote each document, by namespace and _id.
  std::map<std::string,
           std::unordered_map<bson::value, transaction*, bson::value_hash, bson::value_equal>,
           std::less<>>
      writers_;
  // While a commit replays its transaction: the transaction and the stamp its entries share.
  transaction* committing_ = nullptr;
  std::shared_ptr<const txn_info> commit_info_;
  bson::timestamp commit_ts_;
  std::int64_t commit_wall_ms_ = 0;
  std::uint32_t commit_op_index_ = 0;
};

}  // namespace mongo_emulator
