#include "oplog.h"

#include <algorithm>
#include <chrono>

namespace mongo_emulator {

namespace {

// The command a DDL entry stands for, as MongoDB names it in the entry's `o`.
const char* command_name(op_type op) {
  switch (op) {
    case op_type::drop:
      return "drop";
    case op_type::rename:
      return "renameCollection";
    case op_type::drop_database:
      return "dropDatabase";
    case op_type::create:
      return "create";
    case op_type::create_indexes:
      return "createIndexes";
    case op_type::drop_indexes:
      return "dropIndexes";
    case op_type::modify:
      return "collMod";
    default:
      return "";
  }
}

bson::document ddl_object(const oplog_entry& e) {
  bson::document o;
  switch (e.op) {
    case op_type::drop_database:
      o.append("dropDatabase", std::int32_t{1});
      break;
    case op_type::rename:
      o.append("renameCollection", e.db + "." + e.coll);
      o.append("to", e.to_db + "." + e.to_coll);
      o.append("stayTemp", false);
      break;
    default:
      o.append(command_name(e.op), e.coll);
  }
  if (e.ddl) {
    for (const auto& f : e.ddl->description)
      o.append(f.name, f.val);
  }
  return o;
}

}  // namespace

bson::document oplog_document(const oplog_entry& e) {
  bson::document d;
  const bool ddl = e.op != op_type::insert && e.op != op_type::update && e.op != op_type::replace &&
                   e.op != op_type::remove;
  switch (e.op) {
    case op_type::insert:
      d.append("op", "i");
      break;
    case op_type::update:
    case op_type::replace:
      d.append("op", "u");
      break;
    case op_type::remove:
      d.append("op", "d");
      break;
    default:
      d.append("op", "c");
  }
  d.append("ns", ddl ? e.db + ".$cmd" : e.db + "." + e.coll);
  if (e.uuid) d.append("ui", *e.uuid);
  if (ddl) {
    d.append("o", ddl_object(e));
  } else if (e.op == op_type::remove) {
    d.append("o", bson::document{{"_id", e.id}});
  } else if (e.op != op_type::update && e.full_document) {
    d.append("o", *e.full_document);
  }
  if (e.op == op_type::update || e.op == op_type::replace)
    d.append("o2", bson::document{{"_id", e.id}});
  d.append("ts", e.ts);
  d.append("t", std::int64_t{1});
  d.append("v", std::int64_t{2});
  d.append("wall", bson::date_time{e.wall_ms});
  return d;
}

void oplog::append(oplog_entry entry) {
  const std::int64_t now_ms = entry.wall_ms;
  entries_.push_back(std::move(entry));
  trim(now_ms);
}

void oplog::resize(std::size_t max_events, double min_retention_hours) {
  max_events_ = max_events == 0 ? 1 : max_events;
  min_retention_hours_ = min_retention_hours;
  using namespace std::chrono;
  trim(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

void oplog::trim(std::int64_t now_ms) {
  const auto retention_ms = static_cast<std::int64_t>(min_retention_hours_ * 3600 * 1000);
  while (entries_.size() > max_events_) {
    // MongoDB keeps what minRetentionHours covers even when the oplog outgrows its size.
    if (retention_ms > 0 && entries_.front().wall_ms > now_ms - retention_ms) break;
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

const oplog_entry* oplog::find(bson::timestamp ts, std::uint32_t txn_op_index) const {
  const std::size_t i = lower_bound(ts) + txn_op_index;
  if (i < entries_.size() && entries_[i].ts == ts && entries_[i].txn_op_index == txn_op_index)
    return &entries_[i];
  return nullptr;
}

bool oplog::history_lost(bson::timestamp ts, bool inclusive) const {
  return truncated_ && (inclusive ? ts <= newest_dropped_ : ts < newest_dropped_);
}

}  // namespace mongo_emulator
