#pragma once
// One multi-document transaction (MongoDB 4.0+ `startTransaction`/`autocommit: false`): the
// snapshot it reads, its own writes, and what others committed since its snapshot.
//
// Snapshot isolation without versioned storage: a collection the transaction touches gets a
// private view the first time it does (collection::view_of: the stored collection plus what
// differs, never a copy), in which the documents others changed since the snapshot show as
// they were then (storage records their first pre-image into every open transaction).
// Statements run against the views; the storage write paths see that a view belongs to a
// transaction and, instead of recording change events, check for write conflicts and append
// the write to `ops()`. Commit replays the ops on the real collections under one clusterTime;
// abort drops the views.
// Not synchronized: owned by storage (one per session) and accessed under its lock. A statement
// running in it shares that ownership (storage::begin_or_continue), since a step-down or the
// lifetime reaper may end the transaction on another thread between the statement's lock scopes.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bson/value_hash.h"
#include "collection.h"
#include "oplog.h"

namespace mongo_emulator {

class storage;

class transaction {
 public:
  // One write of the transaction, replayed in order at commit (one change event each).
  struct op {
    op_type type = op_type::insert;
    std::string db;
    std::string coll;
    bson::value id;
    doc_ptr doc;  // insert/update/replace: the document after the write
    bson::document update_description;
  };
  // A document as the snapshot had it, and its record then.
  struct snapshot_version {
    doc_ptr before;
    std::optional<std::uint64_t> record;
  };
  using id_map =
      std::unordered_map<bson::value, snapshot_version, bson::value_hash, bson::value_equal>;

  transaction(bson::document lsid, std::int64_t number, bson::timestamp snapshot);
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  const bson::document& lsid() const { return lsid_; }
  std::int64_t number() const { return number_; }
  bson::timestamp snapshot() const { return snapshot_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

  // The collection as this transaction sees it: its snapshot plus its own writes. nullptr when
  // it does not exist and `create` is false; with `create`, an empty view that commit creates.
  collection* view(const storage& s, std::string_view db, std::string_view coll, bool create);

  // Others' committed change of document `id` in `ns` after the snapshot: the first one keeps
  // the document as the snapshot had it (nullptr: absent), at its `record` when it had one.
  void note_committed_change(const std::string& ns, const bson::value& id, doc_ptr before,
                             std::optional<std::uint64_t> record);
  // Whether `id` in `ns` changed since the snapshot (writing it now is a write conflict).
  bool changed_since_snapshot(const std::string& ns, const bson::value& id) const;

  // Set by storage when the transaction commits or aborts. A statement that entered it before
  // may still hold it: its writes then fail (storage::claim) instead of claiming documents for a
  // transaction that no longer exists.
  void end(bool committed) { outcome_ = committed ? outcome::committed : outcome::aborted; }
  bool ended() const { return outcome_ != outcome::open; }
  bool committed() const { return outcome_ == outcome::committed; }

  void add_op(op o) { ops_.push_back(std::move(o)); }
  const std::vector<op>& ops() const { return ops_; }

 private:
  bson::document lsid_;
  std::int64_t number_;
  bson::timestamp snapshot_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::map<std::string, std::unique_ptr<collection>, std::less<>> views_;  // by namespace
  std::map<std::string, id_map, std::less<>> changed_;                     // by namespace
  std::vector<op> ops_;
  enum class outcome : std::uint8_t { open, committed, aborted } outcome_ = outcome::open;
};

}  // namespace mongo_emulator
