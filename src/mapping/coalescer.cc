#include "mapping/coalescer.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/overloaded.h"
#include "mapping/planner.h"

namespace denormd::mapping {

namespace {

// Orders keys as MongoDB compares them: 1, 1L and 1.0 are one key, as they are one parent
// (one `_id`) and one `$eq` match. Keeping them apart would split one parent's deltas into
// statements that share positions, and the parent's guard would drop all but the first.
struct key_less {
  bool operator()(const bson::value& a, const bson::value& b) const {
    return bson::compare(a, b) < 0;
  }
};

// Identifies (mapping, key) under that equality.
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

// `into` now also applies `op`: it stands for the latest of their events and keeps the
// earliest wall time (for apply latency).
void absorb_times(write_op& into, const write_op& op) {
  into.event = std::max(into.event, op.event);
  if (op.event_ms != 0 && (into.event_ms == 0 || op.event_ms < into.event_ms)) {
    into.event_ms = op.event_ms;
  }
}

// Recomputes read the children when they run, so one per aggregate mapping and batch does the
// work of all of them, wherever it stands: the union of their parents, or every parent when
// any of them is.
class recompute_merger {
 public:
  // True when `op` was merged into its mapping's earlier recompute (and is to be dropped);
  // false when it is the first, to be kept at slots.size().
  bool merge(write_op& op, std::vector<std::optional<write_op>>& slots) {
    auto [it, fresh] = open_.try_emplace(op.source_mapping);
    open& o = it->second;
    if (fresh) {
      o.slot = slots.size();
      for (const auto& k : op.as<recompute_write>()->keys)
        o.keys.insert(k);
      return false;
    }
    write_op& into = *slots[o.slot];
    absorb_times(into, op);
    auto& keys = into.as<recompute_write>()->keys;
    if (keys.empty()) return true;  // already every parent
    auto& more = op.as<recompute_write>()->keys;
    if (more.empty()) keys.clear();
    for (auto& k : more) {
      if (o.keys.insert(k).second) keys.push_back(std::move(k));
    }
    const mapping& m = *into.source_mapping;
    m.visit(overloaded{[&](const aggregate_kind& k) {
                         into.what = std::move(k.recompute(m, std::move(keys)).what);
                       },
                       // A kind that plans merge_rule::recompute must say how they merge.
                       [](const auto&) { assert(false && "only aggregate plans recomputes"); }});
    return true;
  }

 private:
  struct open {
    std::size_t slot = 0;
    std::set<bson::value, key_less> keys;  // the slot's keys
  };
  std::unordered_map<const mapping*, open> open_;
};

// Type checks (aggregate_kind::retype) must read their parents after every delta that may have
// left them stale: one per mapping and batch, moved to the place of the last, which is after
// the deltas of every parent it names (a parent's deltas merge at the place of its first).
class retype_merger {
 public:
  // Merges the mapping's earlier check, if any, into `op` (which is then kept at the end).
  void merge(write_op& op, std::vector<std::optional<write_op>>& slots) {
    auto [it, fresh] = open_.try_emplace(op.source_mapping);
    open& o = it->second;
    auto& keys = op.as<recompute_write>()->keys;
    if (!fresh) {
      write_op earlier = std::move(*slots[o.slot]);
      slots[o.slot].reset();
      absorb_times(op, earlier);
      bson::array all = std::move(earlier.as<recompute_write>()->keys);
      for (auto& k : keys) {
        if (o.keys.insert(k).second) all.push_back(std::move(k));
      }
      const mapping& m = *op.source_mapping;
      m.visit(overloaded{
          [&](const aggregate_kind& k) { op.what = std::move(k.retype(m, std::move(all)).what); },
          [](const auto&) { assert(false && "only aggregate plans type checks"); }});
    } else {
      for (const auto& k : keys)
        o.keys.insert(k);
    }
    o.slot = slots.size();
  }

 private:
  struct open {
    std::size_t slot = 0;
    std::set<bson::value, key_less> keys;
  };
  std::unordered_map<const mapping*, open> open_;
};

// Incremental deltas commute (each parent applies each event once, whatever the order), so
// all of one parent's in a batch make one statement, rebuilt from their merged events.
class delta_merger {
 public:
  // True when `op` was merged into its parent's earlier delta (and is to be dropped).
  bool merge(write_op& op, std::vector<std::optional<write_op>>& slots) {
    auto [it, fresh] = open_.try_emplace(merge_id_of(op), slots.size());
    if (fresh) return false;
    write_op& into = *slots[it->second];
    absorb_times(into, op);
    auto& events = into.as<update_write>()->delta->events;
    for (auto& e : op.as<update_write>()->delta->events)
      events.push_back(std::move(e));
    merged_.insert(it->second);
    return true;
  }
  // Rebuilds the statement of every delta that absorbed others.
  void rebuild(std::vector<std::optional<write_op>>& slots) const {
    for (const std::size_t i : merged_) {
      write_op& op = *slots[i];
      const mapping& m = *op.source_mapping;
      m.visit(overloaded{[&](const aggregate_kind& k) {
                           write_op rebuilt = k.deltas(m, std::move(*op.as<update_write>()->delta));
                           rebuilt.event = op.event;
                           rebuilt.event_ms = op.event_ms;
                           op = std::move(rebuilt);
                         },
                         // A kind that plans merge_rule::delta must say how deltas merge.
                         [](const auto&) { assert(false && "only aggregate plans deltas"); }});
    }
  }

 private:
  by_merge_id<std::size_t> open_;           // merge_id -> slot
  std::unordered_set<std::size_t> merged_;  // slots to rebuild
};

}  // namespace

std::vector<write_op> coalesce(std::vector<write_op> ops) {
  std::vector<std::optional<write_op>> slots;
  slots.reserve(ops.size());
  by_merge_id<std::size_t> last_copy;
  by_merge_id<std::size_t> open_push;
  recompute_merger recomputes;
  retype_merger retypes;
  delta_merger deltas;

  for (auto& op : ops) {
    switch (op.merge) {
      case merge_rule::last_wins: {
        auto [it, fresh] = last_copy.try_emplace(merge_id_of(op), slots.size());
        if (!fresh) {
          // The earlier event is applied by this op too: it keeps the older wall time.
          const std::int64_t earlier = slots[it->second]->event_ms;
          if (earlier != 0 && (op.event_ms == 0 || earlier < op.event_ms)) op.event_ms = earlier;
          slots[it->second].reset();
          it->second = slots.size();
        }
        break;
      }
      case merge_rule::push: {
        merge_id id = merge_id_of(op);
        if (auto it = open_push.find(id); it != open_push.end()) {
          write_op& into = *slots[it->second];
          absorb_times(into, op);
          auto& into_ids = into.as<update_write>()->push->ids;
          for (auto& v : op.as<update_write>()->push->ids)
            into_ids.push_back(std::move(v));
          for (auto& e : pushed_elements(op))
            pushed_elements(into).push_back(std::move(e));
          continue;
        }
        open_push[std::move(id)] = slots.size();
        break;
      }
      case merge_rule::parent_barrier:
        open_push.erase(merge_id_of(op));
        break;
      case merge_rule::mapping_barrier:
        std::erase_if(open_push, [&](const auto& entry) {
          return slots[entry.second]->source_mapping == op.source_mapping;
        });
        break;
      case merge_rule::recompute:
        if (recomputes.merge(op, slots)) continue;
        break;
      case merge_rule::delta:
        if (deltas.merge(op, slots)) continue;
        break;
      case merge_rule::retype:
        retypes.merge(op, slots);
        break;
      case merge_rule::none:
        break;
    }
    slots.push_back(std::move(op));
  }

  deltas.rebuild(slots);

  std::vector<write_op> out;
  out.reserve(slots.size());
  for (auto& slot : slots) {
    if (!slot) continue;
    auto* w = slot->as<update_write>();
    if (slot->merge == merge_rule::push && w != nullptr && w->push && w->push->ids.size() > 1) {
      const std::size_t first = out.size();
      const mapping& m = *slot->source_mapping;
      m.visit(overloaded{[&](const recent_kind& k) {
                           k.push(m, std::move(w->push->parent), std::move(w->push->ids),
                                  std::move(pushed_elements(*slot)), out);
                         },
                         // A kind that plans merge_rule::push must say how pushes merge.
                         [](const auto&) { assert(false && "only recent plans pushes"); }});
      for (std::size_t i = first; i < out.size(); ++i) {
        out[i].event = slot->event;
        out[i].event_ms = slot->event_ms;
      }
    } else {
      out.push_back(std::move(*slot));
    }
  }
  return out;
}

}  // namespace denormd::mapping
