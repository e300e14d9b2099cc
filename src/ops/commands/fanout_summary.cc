#include "ops/commands/fanout_summary.h"

#include <algorithm>
#include <cmath>

namespace denormd::ops {

namespace {

// Whether `a` belongs higher in the top than `b`: more dependents, then the smaller key.
bool ranks_before(const fanout_key& a, const fanout_key& b) {
  if (a.dependents != b.dependents) return a.dependents > b.dependents;
  return bson::compare(a.key, b.key) < 0;
}

}  // namespace

void fanout_summary::add(const bson::value& key, std::int64_t dependents) {
  if (dependents <= 0) return;
  ++by_count_[dependents];
  ++keys_;
  total_ += dependents;
  if (top_length_ == 0) return;
  // A heap whose front is the key that leaves first: the top holds top_length_ keys at most.
  if (top_.size() == top_length_) {
    if (!ranks_before(fanout_key{key, dependents}, top_.front())) return;
    std::pop_heap(top_.begin(), top_.end(), ranks_before);
    top_.pop_back();
  }
  top_.push_back({key, dependents});
  std::push_heap(top_.begin(), top_.end(), ranks_before);
}

double fanout_summary::mean() const {
  return keys_ == 0 ? 0.0 : static_cast<double>(total_) / static_cast<double>(keys_);
}

std::int64_t fanout_summary::percentile(double q) const {
  if (keys_ == 0) return 0;
  const auto rank = static_cast<std::int64_t>(std::ceil(q * static_cast<double>(keys_)));
  std::int64_t seen = 0;
  for (const auto& [count, keys] : by_count_) {
    seen += keys;
    if (seen >= std::max<std::int64_t>(rank, 1)) return count;
  }
  return by_count_.rbegin()->first;
}

std::int64_t fanout_summary::max() const {
  return by_count_.empty() ? 0 : by_count_.rbegin()->first;
}

std::vector<fanout_key> fanout_summary::top() const {
  std::vector<fanout_key> out = top_;
  std::sort(out.begin(), out.end(), ranks_before);
  return out;
}

void fanout_summary::for_each_count(
    const std::function<void(std::int64_t, std::int64_t)>& f) const {
  for (const auto& [count, keys] : by_count_)
    f(count, keys);
}

}  // namespace denormd::ops
