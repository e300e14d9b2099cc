#include "mapping/coalescer.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "bson/json.h"
#include "common/overloaded.h"
#include "mapping/planner.h"

namespace denormd::mapping {

namespace {

// Identifies (mapping, key). Canonical JSON keeps 1 and 1.0 apart, which only means fewer
// merges, never a wrong one.
std::string merge_id(const write_op& op) {
  std::string id = op.source_mapping != nullptr ? op.source_mapping->name : std::string();
  id += '\0';
  bson::write_json(id, op.merge_key, bson::json_mode::canonical);
  return id;
}

// Merges recompute `op` into `into`, both of one aggregate mapping: the union of their
// parents, or every parent when either is. `seen` holds the keys of `into` (canonical JSON).
void merge_recompute(write_op& into, write_op& op, std::unordered_set<std::string>& seen) {
  into.event = std::max(into.event, op.event);
  if (op.event_ms != 0 && (into.event_ms == 0 || op.event_ms < into.event_ms)) {
    into.event_ms = op.event_ms;
  }
  auto& keys = into.as<recompute_write>()->keys;
  if (keys.empty()) return;  // already every parent
  auto& more = op.as<recompute_write>()->keys;
  if (more.empty()) {
    keys.clear();
  } else {
    for (auto& k : more) {
      std::string id;
      bson::write_json(id, k, bson::json_mode::canonical);
      if (seen.insert(std::move(id)).second) keys.push_back(std::move(k));
    }
  }
  const mapping& m = *into.source_mapping;
  m.visit(overloaded{[&](const aggregate_kind& k) {
                       auto merged = k.recompute(m, std::move(keys));
                       into.what = std::move(merged.what);
                     },
                     // A kind that plans merge_rule::recompute must say how they merge.
                     [](const auto&) { assert(false && "only aggregate plans recomputes"); }});
}

}  // namespace

std::vector<write_op> coalesce(std::vector<write_op> ops) {
  std::vector<std::optional<write_op>> slots;
  slots.reserve(ops.size());
  std::unordered_map<std::string, std::size_t> last_copy;
  std::unordered_map<std::string, std::size_t> open_push;
  struct open_recompute {
    std::size_t slot;
    std::unordered_set<std::string> keys;
  };
  std::unordered_map<const mapping*, open_recompute> recomputes;

  for (auto& op : ops) {
    switch (op.merge) {
      case merge_rule::last_wins: {
        auto [it, fresh] = last_copy.try_emplace(merge_id(op), slots.size());
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
        const std::string id = merge_id(op);
        if (auto it = open_push.find(id); it != open_push.end()) {
          write_op& into = *slots[it->second];
          into.event = std::max(into.event, op.event);
          if (op.event_ms != 0 && (into.event_ms == 0 || op.event_ms < into.event_ms)) {
            into.event_ms = op.event_ms;
          }
          auto& into_ids = into.as<update_write>()->push->ids;
          for (auto& v : op.as<update_write>()->push->ids)
            into_ids.push_back(std::move(v));
          for (auto& e : pushed_elements(op))
            pushed_elements(into).push_back(std::move(e));
          continue;
        }
        open_push[id] = slots.size();
        break;
      }
      case merge_rule::parent_barrier:
        open_push.erase(merge_id(op));
        break;
      case merge_rule::mapping_barrier:
        std::erase_if(open_push, [&](const auto& entry) {
          return slots[entry.second]->source_mapping == op.source_mapping;
        });
        break;
      case merge_rule::recompute: {
        // Recomputes read the children when they run, so one per mapping and batch does the
        // work of all of them, wherever it stands.
        auto [it, fresh] = recomputes.try_emplace(op.source_mapping);
        if (!fresh) {
          merge_recompute(*slots[it->second.slot], op, it->second.keys);
          continue;
        }
        it->second.slot = slots.size();
        for (const auto& k : op.as<recompute_write>()->keys) {
          std::string id;
          bson::write_json(id, k, bson::json_mode::canonical);
          it->second.keys.insert(std::move(id));
        }
        break;
      }
      case merge_rule::none:
        break;
    }
    slots.push_back(std::move(op));
  }

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
