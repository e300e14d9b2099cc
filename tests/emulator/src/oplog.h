#pragma once
// The bounded change history change streams read: one entry per change, in (clusterTime,
// txn_op_index) order; only the entries of one transaction share a clusterTime. Not synchronized:
// owned by storage and accessed under its lock.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "bson/value.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// What a DDL entry adds (create, create_indexes, drop_indexes, modify): the event's
// operationDescription, and modify's stateBeforeChange.
struct ddl_details {
  bson::document description;
  std::optional<bson::document> state_before;
};

enum class op_type : std::uint8_t {
  insert,
  update,
  replace,
  remove,
  drop,
  rename,
  drop_database,
  // Seen only by streams with showExpandedEvents (MongoDB 6.0's expanded events).
  create,
  create_indexes,
  drop_indexes,
  modify,
};

// The session and number of the transaction an entry was committed by.
struct txn_info {
  bson::document lsid;
  std::int64_t number = 0;
};

struct oplog_entry {
  bson::timestamp ts;
  // The entries of one transaction share `ts` and are numbered from 0 in commit order (MongoDB's
  // txnOpIndex); 0 for every other entry.
  std::uint32_t txn_op_index = 0;
  std::shared_ptr<const txn_info> txn;  // null outside transactions
  std::int64_t wall_ms = 0;
  op_type op = op_type::insert;
  std::string db;
  std::string coll;                          // empty for drop_database
  std::string to_db;                         // rename only
  std::string to_coll;                       // rename only
  std::shared_ptr<const bson::binary> uuid;  // the collection's (all but drop_database)
  bson::value id;                            // the document's _id (document changes only)
  // insert/replace: the new document; update: the post-image when images are recorded.
  std::shared_ptr<const bson::document> full_document;
  // update/replace/delete: the pre-image when images are recorded.
  std::shared_ptr<const bson::document> pre_image;
  bson::document update_description;  // update only
  bool images_recorded = false;       // the collection had changeStreamPreAndPostImages enabled
  // DDL entries (and a rename that dropped its target); behind a pointer so that document
  // changes stay small.
  std::shared_ptr<const ddl_details> ddl;
};

// The entry as MongoDB 6.0 shows it in `local.oplog.rs`: op ("i", "u", "d", or "c" for DDL), ns
// ("db.coll", "db.$cmd" for DDL), ui (the collection's UUID), o, o2 (update, replace: {_id}),
// ts, t (term, always 1), v (2), wall. `o` is the document for an insert or replace, {_id} for
// a delete, and for DDL the command's name and collection followed by the entry's
// operationDescription; an update has no `o` (MongoDB's `{$v: 2, diff}` is not kept here).
bson::document oplog_document(const oplog_entry& e);

class oplog {
 public:
  explicit oplog(std::size_t max_events) : max_events_(max_events == 0 ? 1 : max_events) {}

  void append(oplog_entry entry);
  // replSetResizeOplog: the new bound (discarding the oldest entries past it now) and
  // MongoDB's minRetentionHours (0: none), which keeps entries younger than that past the bound.
  void resize(std::size_t max_events, double min_retention_hours);
  std::size_t max_events() const { return max_events_; }
  double min_retention_hours() const { return min_retention_hours_; }

  std::size_t size() const { return entries_.size(); }
  const oplog_entry& at(std::size_t i) const { return entries_[i]; }
  // Position of the first entry with ts >= `ts` (size() when there is none).
  std::size_t lower_bound(bson::timestamp ts) const;
  // The entry at exactly `ts` and `txn_op_index`, if it is still kept.
  const oplog_entry* find(bson::timestamp ts, std::uint32_t txn_op_index = 0) const;
  // True when a change after `ts` (or at it, when `inclusive`) may have been discarded.
  bool history_lost(bson::timestamp ts, bool inclusive) const;

 private:
  // Drops the oldest entries past the bound, except those minRetentionHours keeps (younger
  // than that at `now_ms`).
  void trim(std::int64_t now_ms);

  std::size_t max_events_;
  double min_retention_hours_ = 0;
  std::deque<oplog_entry> entries_;
  bool truncated_ = false;
  bson::timestamp newest_dropped_;
};

}  // namespace mongo_emulator
