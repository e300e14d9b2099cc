#include "mapping/coalescer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "mapping/planner.h"

namespace denormd::mapping {

namespace {

// Identifies (mapping, key) under MongoDB's equality: 1, 1L and 1.0 are one key, as they are
// one parent (one `_id`) and one `$eq` match. Keeping them apart would split one parent's
// deltas into statements that share positions, and the parent's guard would drop all but the
// first.
using merge_id = std::pair<const mapping*, bson::value>;
struct merge_id_less {
  bool operator()(const merge_id& a, const merge_id& b) const {
    if (a.first != b.first) return std::less<const mapping*>{}(a.first, b.first);
    return bson::compare(a.second, b.second) < 0;
  }
};
template <class V>
using by_merge_id = std::map<merge_id, V, merge_id_less>;

merge_id merge_id_of(const write_op& op) {
  return {op.source_mapping, op.merge_key};
}

// Where each merge rule keeps its open ops, and which slots absorbed others. What merging
// does to an op's statement is the kind's (absorb, finish); where the merged op stands is the
// rule's, decided here.
class batch {
 public:
  explicit batch(std::size_t n) { slots_.reserve(n); }

  void add(write_op op) {
    switch (op.merge) {
      case merge_rule::last_wins:
        // The later op stands for both, at its own place.
        if (auto it = last_wins_.find(merge_id_of(op)); it != last_wins_.end()) {
          absorb(op, take(it->second));
          merged_.insert(slots_.size());
          it->second = slots_.size();
        } else {
          last_wins_.emplace(merge_id_of(op), slots_.size());
        }
        break;
      case merge_rule::push:
        if (merged_into_first(open_push_, op)) return;
        break;
      case merge_rule::delta:
        if (merged_into_first(open_delta_, op)) return;
        break;
      case merge_rule::parent_barrier:
        open_push_.erase(merge_id_of(op));
        break;
      case merge_rule::mapping_barrier:
        std::erase_if(open_push_,
                      [&](const auto& entry) { return entry.first.first == op.source_mapping; });
        break;
      case merge_rule::recompute:
        // Recomputes read the children when they run, so one per mapping and batch does the
        // work of all of them, wherever it stands.
        if (auto it = open_recompute_.find(op.source_mapping); it != open_recompute_.end()) {
          absorb(*slots_[it->second], std::move(op));
          merged_.insert(it->second);
          return;
        }
        open_recompute_.emplace(op.source_mapping, slots_.size());
        break;
      case merge_rule::retype:
        // A type check reads its parents after every delta that may have left them stale:
        // one per mapping and batch, at the place of the last, which is after the deltas of
        // every parent it names (a parent's deltas merge at the place of its first).
        if (auto it = open_retype_.find(op.source_mapping); it != open_retype_.end()) {
          absorb(op, take(it->second));
          merged_.erase(it->second);
          merged_.insert(slots_.size());
          it->second = slots_.size();
        } else {
          open_retype_.emplace(op.source_mapping, slots_.size());
        }
        break;
      case merge_rule::none:
        break;
    }
    slots_.push_back(std::move(op));
  }

  // The ops in place, each that absorbed others rebuilt by its kind.
  std::vector<write_op> ops() && {
    std::vector<write_op> out;
    out.reserve(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i]) continue;
      if (!merged_.contains(i)) {
        out.push_back(std::move(*slots_[i]));
        continue;
      }
      write_op& op = *slots_[i];
      const std::size_t first = out.size();
      const std::size_t event = op.event;
      const std::int64_t event_ms = op.event_ms;
      const mapping& m = *op.source_mapping;
      m.visit([&](const auto& k) { k.finish(m, std::move(op), out); });
      for (std::size_t j = first; j < out.size(); ++j) {
        out[j].event = event;
        out[j].event_ms = event_ms;
      }
    }
    return out;
  }

 private:
  // A later op to the same key merges into the first, at its place: true when `op` did.
  bool merged_into_first(by_merge_id<std::size_t>& open, write_op& op) {
    auto [it, fresh] = open.try_emplace(merge_id_of(op), slots_.size());
    if (fresh) return false;
    absorb(*slots_[it->second], std::move(op));
    merged_.insert(it->second);
    return true;
  }

  write_op take(std::size_t slot) {
    write_op op = std::move(*slots_[slot]);
    slots_[slot].reset();
    return op;
  }

  // `into` now also applies `other`: it stands for the latest of their events and keeps the
  // earliest wall time (for apply latency).
  static void absorb(write_op& into, write_op&& other) {
    into.event = std::max(into.event, other.event);
    if (other.event_ms != 0 && (into.event_ms == 0 || other.event_ms < into.event_ms)) {
      into.event_ms = other.event_ms;
    }
    const mapping& m = *into.source_mapping;
    m.visit([&](const auto& k) { k.absorb(m, into, std::move(other)); });
  }

  std::vector<std::optional<write_op>> slots_;
  by_merge_id<std::size_t> last_wins_;   // by (mapping, source key)
  by_merge_id<std::size_t> open_push_;   // by (mapping, parent)
  by_merge_id<std::size_t> open_delta_;  // by (mapping, parent)
  std::unordered_map<const mapping*, std::size_t> open_recompute_;
  std::unordered_map<const mapping*, std::size_t> open_retype_;
  std::unordered_set<std::size_t> merged_;
};

}  // namespace

std::vector<write_op> coalesce(std::vector<write_op> ops) {
  batch b(ops.size());
  for (auto& op : ops)
    b.add(std::move(op));
  return std::move(b).ops();
}

}  // namespace denormd::mapping
