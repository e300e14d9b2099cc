#pragma once
// A mapping's fan-out as `denormd cost` measures it: how many dependents each source key has
// (copy: targets per source key; recent and aggregate: children per parent), summarised as
// mean, p50, p99, max and the keys with the most. The counts stream in from a $group on the
// server; memory grows with the number of distinct counts (a map from a count to how many keys
// have it gives exact percentiles) and the length of the top list, never with the keys.
//
// Lifecycle: add() each key once, then read. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "bson/value.h"

namespace denormd::ops {

struct fanout_key {
  bson::value key;  // a value read from users' data: shown, never queried with
  std::int64_t dependents = 0;
};

class fanout_summary {
 public:
  explicit fanout_summary(std::size_t top_length = 10) : top_length_(top_length) {}

  // One key and its dependents (a count of 0 or less is left out: it references nothing).
  void add(const bson::value& key, std::int64_t dependents);

  std::int64_t keys() const { return keys_; }
  std::int64_t dependents() const { return total_; }
  double mean() const;
  // The nearest-rank percentile: the smallest count that at least `q` (0 < q <= 1) of the
  // keys do not exceed; 0 without keys.
  std::int64_t percentile(double q) const;
  std::int64_t max() const;
  // The keys with the most dependents, most first; equal counts in BSON order of the key.
  std::vector<fanout_key> top() const;
  // Calls `f(count, keys)` for each distinct count, smallest first.
  void for_each_count(const std::function<void(std::int64_t, std::int64_t)>& f) const;
  // What the memory grows with: the distinct counts held.
  std::size_t distinct_counts() const { return by_count_.size(); }

 private:
  std::size_t top_length_;
  std::map<std::int64_t, std::int64_t> by_count_;  // count -> keys with it
  std::vector<fanout_key> top_;                    // a heap, its least wanted key first
  std::int64_t keys_ = 0;
  std::int64_t total_ = 0;
};

}  // namespace denormd::ops
