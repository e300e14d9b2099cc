#pragma once
// A MongoDB namespace, or one partition of it: the share of its keys that one change stream of
// a partitioned namespace reads (docs/architecture.md, "Partitioned streams"). Plain value.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace denormd::mapping {

// Partition `index` of `count`: the keys whose hashed index key is `index` modulo `count`
// (bson::hashed_partition). count 0: the whole namespace.
struct partition {
  int index = 0;
  int count = 0;
  bool whole() const { return count == 0; }
  bool operator==(const partition&) const = default;
  auto operator<=>(const partition&) const = default;
};

struct ns {
  std::string db;
  std::string coll;
  partition part{};
  // The collection's name, "db.coll", whatever the partition: what messages, dead letters and
  // queries name.
  std::string full() const { return db + "." + coll; }
  // The unit a pipeline, a checkpoint, a lease and a metric label are kept under: full() for a
  // whole namespace, "db.coll#i/N" for partition i of N.
  std::string unit() const {
    return part.whole()
               ? full()
               : full() + "#" + std::to_string(part.index) + "/" + std::to_string(part.count);
  }
  // The whole namespace this is (a part of).
  ns collection() const { return ns{db, coll, {}}; }
  bool operator==(const ns&) const = default;
  auto operator<=>(const ns&) const = default;
};

// A unit name back as a namespace: "db.coll" or "db.coll#i/N" (0 <= i < N). nullopt when it is
// neither (no dot, or a malformed suffix).
std::optional<ns> parse_unit(std::string_view unit);

}  // namespace denormd::mapping
