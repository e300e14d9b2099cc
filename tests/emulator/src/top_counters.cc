#include "top_counters.h"

#include <array>
#include <limits>
#include <optional>

namespace mongo_emulator {

namespace {

struct classification {
  std::string_view command;
  top_counters::bucket bucket;
  top_counters::lock_kind lock;
};

// The LogicalOp each command's CurOp carries when Top records it (find: opQuery, getMore:
// opGetMore, the write commands their statements' op, every other command opCommand) and the
// lock its AutoStatsTracker or finishCurOp reports (findAndModify: recordStatsForTopCommand,
// WriteLocked).
constexpr std::array<classification, 15> commands{{
    {"find", top_counters::bucket::queries, top_counters::lock_kind::read},
    {"getMore", top_counters::bucket::getmore, top_counters::lock_kind::read},
    {"insert", top_counters::bucket::insert, top_counters::lock_kind::write},
    {"update", top_counters::bucket::update, top_counters::lock_kind::write},
    {"delete", top_counters::bucket::remove, top_counters::lock_kind::write},
    {"findAndModify", top_counters::bucket::commands, top_counters::lock_kind::write},
    {"findandmodify", top_counters::bucket::commands, top_counters::lock_kind::write},
    {"aggregate", top_counters::bucket::commands, top_counters::lock_kind::read},
    {"count", top_counters::bucket::commands, top_counters::lock_kind::read},
    {"distinct", top_counters::bucket::commands, top_counters::lock_kind::read},
    {"listIndexes", top_counters::bucket::commands, top_counters::lock_kind::read},
    {"collStats", top_counters::bucket::commands, top_counters::lock_kind::read},
    {"createIndexes", top_counters::bucket::commands, top_counters::lock_kind::write},
    {"dropIndexes", top_counters::bucket::commands, top_counters::lock_kind::write},
    {"deleteIndexes", top_counters::bucket::commands, top_counters::lock_kind::write},
}};

// The namespace the command runs on: its collection, a getMore's `collection`, or
// "db.$cmd.aggregate" for {aggregate: 1}.
std::optional<std::string> command_namespace(std::string_view command, const std::string& db,
                                             const bson::document& body) {
  const bson::value& first = body.fields().front().val;
  if (command == "getMore") {
    const auto* coll = body.get("collection");
    if (coll == nullptr || !coll->is_string()) return std::nullopt;
    return db + "." + coll->as_string();
  }
  if (first.is_string()) return db + "." + first.as_string();
  if (command == "aggregate") return db + ".$cmd.aggregate";
  return std::nullopt;
}

// update and delete record each statement (performUpdates/performDeletes finish a CurOp per
// statement); everything else once.
std::int64_t statements(std::string_view command, const bson::document& body) {
  const char* field = command == "update" ? "updates" : command == "delete" ? "deletes" : nullptr;
  if (field == nullptr) return 1;
  const auto* list = body.get(field);
  if (list == nullptr || !list->is_array() || list->as_array().empty()) return 1;
  return static_cast<std::int64_t>(list->as_array().size());
}

// BSONObjBuilder::appendNumber(long long): an int32 when it fits.
bson::value number(std::int64_t n) {
  if (n >= std::numeric_limits<std::int32_t>::min() &&
      n <= std::numeric_limits<std::int32_t>::max())
    return bson::value(static_cast<std::int32_t>(n));
  return bson::value(n);
}

}  // namespace

void top_counters::record(const std::string& ns, bucket b, lock_kind lock, std::int64_t micros,
                          std::int64_t count) {
  std::lock_guard guard(mutex_);
  collection_usage& u = usage_[ns];
  u.total.add(micros, count);
  (lock == lock_kind::write ? u.write_lock : u.read_lock).add(micros, count);
  usage* by_op = nullptr;
  switch (b) {
    case bucket::queries:
      by_op = &u.queries;
      break;
    case bucket::getmore:
      by_op = &u.getmore;
      break;
    case bucket::insert:
      by_op = &u.insert;
      break;
    case bucket::update:
      by_op = &u.update;
      break;
    case bucket::remove:
      by_op = &u.remove;
      break;
    case bucket::commands:
      by_op = &u.commands;
      break;
  }
  by_op->add(micros, count);
}

void top_counters::record_command(std::string_view command, const std::string& db,
                                  const bson::document& body,
                                  std::chrono::steady_clock::duration elapsed) {
  if (body.empty()) return;
  const bson::value& first = body.fields().front().val;
  if (command == "drop" && first.is_string())
    return collection_dropped(db + "." + first.as_string());
  if (command == "renameCollection" && first.is_string())
    return collection_dropped(first.as_string());
  if (command == "dropDatabase") return database_dropped(db);
  for (const auto& c : commands) {
    if (c.command != command) continue;
    const auto ns = command_namespace(command, db, body);
    if (!ns) return;
    // The statements of a batch share the command's time.
    record(*ns, c.bucket, c.lock,
           std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count(),
           statements(command, body));
    return;
  }
}

void top_counters::collection_dropped(const std::string& ns) {
  std::lock_guard guard(mutex_);
  usage_.erase(ns);
}

void top_counters::database_dropped(std::string_view db) {
  std::lock_guard guard(mutex_);
  const std::string prefix = std::string(db) + ".";
  for (auto it = usage_.lower_bound(prefix);
       it != usage_.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
    it = usage_.erase(it);
}

bson::document top_counters::to_document() const {
  const auto entry = [](const usage& u) {
    return bson::document{{"time", number(u.time)}, {"count", number(u.count)}};
  };
  bson::document totals;
  totals.append("note", "all times in microseconds");
  std::lock_guard guard(mutex_);
  for (const auto& [ns, u] : usage_) {
    totals.append(ns, bson::document{{"total", entry(u.total)},
                                     {"readLock", entry(u.read_lock)},
                                     {"writeLock", entry(u.write_lock)},
                                     {"queries", entry(u.queries)},
                                     {"getmore", entry(u.getmore)},
                                     {"insert", entry(u.insert)},
                                     {"update", entry(u.update)},
                                     {"remove", entry(u.remove)},
                                     {"commands", entry(u.commands)}});
  }
  return totals;
}

}  // namespace mongo_emulator
