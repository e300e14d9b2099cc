#include "mapping/reload_policy.h"

#include <algorithm>

#include "mapping/change_event.h"

namespace denormd::mapping {

namespace {

const mapping* find_mapping(const planner& p, std::string_view name) {
  for (const auto& m : p.mappings()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool contains(const std::vector<ns>& in, const ns& n) {
  return std::find(in.begin(), in.end(), n) != in.end();
}

}  // namespace

std::vector<ns> reads_of(const mapping& m) {
  std::vector<ns> out{m.source};
  if (m.fill_new_targets && m.target != m.source) out.push_back(m.target);
  return out;
}

set_change compare(const planner& was, const planner& next) {
  set_change out;
  for (const auto& m : next.mappings()) {
    const mapping* before = find_mapping(was, m.name);
    if (before == nullptr)
      out.added.push_back(m.name);
    else if (before->fingerprint() != m.fingerprint())
      out.changed.push_back(m.name);
  }
  for (const auto& m : was.mappings()) {
    if (find_mapping(next, m.name) == nullptr) out.removed.push_back(m.name);
  }
  return out;
}

std::vector<namespace_move> namespace_moves(const std::vector<ns>& was_watched, const planner& was,
                                            const planner& next, bool ha) {
  using kind = namespace_move::kind;
  const std::vector<ns> now_watched = next.watched_namespaces();
  std::vector<namespace_move> out;
  for (const auto& src : was_watched) {
    if (!contains(now_watched, src)) out.push_back({src, kind::stop});
  }
  for (const auto& src : now_watched) {
    if (contains(was_watched, src)) {
      const bool same = was.stream_signature(src) == next.stream_signature(src);
      out.push_back({src, same ? kind::keep : kind::hand_over});
    } else if (!ha) {
      out.push_back({src, kind::start});
    }
  }
  return out;
}

replay replay_from(resume_position base,
                   const std::map<std::string, stop_point, std::less<>>& back) {
  const auto earliest =
      std::min_element(back.begin(), back.end(), [](const auto& a, const auto& b) {
        return token_position(a.second.token) < token_position(b.second.token);
      });
  const stop_point& first = earliest->second;
  const std::string earliest_key = token_position(first.token);
  replay out{std::move(base), false, {}};
  for (const auto& [name, point] : back)
    out.mappings.push_back(name);

  resume_position& at = out.from;
  out.rewound = !at.resume_after || earliest_key < token_position(*at.resume_after);
  if (!at.resume_after) {
    // Nothing applied before here: no position for the others to skip to. They see the
    // missed changes again too, which writes nothing new (every write is idempotent).
    at.resume_after = first.token;
    at.token_time = first.token_time;
    at.filter = first.filter;
    at.start_at.reset();
    return out;
  }
  const std::string base_key = token_position(*at.resume_after);
  replay_gate gate = at.gate ? *at.gate : replay_gate{base_key, {}};
  for (const auto& [name, point] : back) {
    const std::string key = token_position(point.token);
    auto [it, fresh] = gate.from.emplace(name, key);
    if (!fresh && key < it->second) it->second = key;
  }
  at.gate = std::move(gate);
  if (earliest_key < base_key) {
    at.resume_after = first.token;
    at.token_time = first.token_time;
    at.filter = first.filter;
  }
  return out;
}

namespace {

// Ran last time (recorded and not removed) and does not run now.
bool gone_since_last_run(const recorded_mapping& r, const planner& running) {
  return !r.removed && find_mapping(running, r.name) == nullptr;
}

// The units `read` is streamed as now: its partitions when it is partitioned, else itself.
std::vector<ns> units_of(const ns& read, const planner& running) {
  std::vector<ns> out;
  for (const auto& u : running.watched_namespaces()) {
    if (!u.part.whole() && u.collection() == read) out.push_back(u);
  }
  if (out.empty()) out.push_back(read);
  return out;
}

}  // namespace

std::vector<ns> reload_policy::positions_needed(const std::vector<recorded_mapping>& recorded,
                                                const planner& running) {
  std::vector<ns> out;
  auto add = [&](const ns& src) {
    if (!contains(out, src)) out.push_back(src);
  };
  for (const auto& r : recorded) {
    if (gone_since_last_run(r, running)) {
      for (const auto& read : r.reads) {
        for (const auto& u : units_of(read, running))
          add(u);
      }
    }
    for (const auto& p : r.stopped_at)
      add(p.source);
  }
  return out;
}

std::map<ns, std::vector<stopped_mapping>> reload_policy::entries_at_start(
    const std::vector<recorded_mapping>& recorded, const planner& running,
    const std::map<ns, resume_position>& positions) {
  std::map<ns, std::vector<stopped_mapping>> out;
  for (const auto& r : recorded) {
    for (const auto& p : r.stopped_at)
      out[p.source].push_back({r.name, r.fingerprint, p.token, p.token_time, p.filter});
    if (!gone_since_last_run(r, running)) continue;
    for (const auto& read : r.reads) {
      for (const auto& src : units_of(read, running)) {
        const auto at = positions.find(src);
        if (at == positions.end() || !at->second.resume_after) continue;  // never stored: unknown
        const resume_position& pos = at->second;
        out[src].push_back({r.name, r.fingerprint, *pos.resume_after, pos.token_time, pos.filter});
      }
    }
  }
  return out;
}

void reload_policy::start(const std::vector<recorded_mapping>& recorded, const planner& running) {
  // Without --ha every namespace this process ran was settled when its mappings went away, or
  // gets its entries at this start (entries_at_start): no entry means the position is unknown.
  if (!ha_) return;
  for (const auto& r : recorded) {
    if (find_mapping(running, r.name) == nullptr) gone_[r.name] = {r.fingerprint, r.reads};
  }
}

void reload_policy::begin(const planner& was, const planner& next) {
  for (const auto& name : compare(was, next).removed) {
    const mapping* m = find_mapping(was, name);
    gone_[name] = gone_mapping{m->fingerprint(), reads_of(*m)};
  }
  for (const auto& m : next.mappings())
    gone_.erase(m.name);
}

void reload_policy::running(const planner& running) {
  if (!ha_) {
    gone_.clear();
    return;
  }
  for (const auto& m : running.mappings())
    gone_.erase(m.name);
}

settled reload_policy::settle(resume_position base, const ns& source, const planner& next,
                              const std::vector<stopped_mapping>& stored) const {
  settled out{std::move(base), std::nullopt, stored, false, {}};
  auto has_entry = [&](std::string_view name) {
    return std::any_of(out.entries.begin(), out.entries.end(),
                       [&](const auto& e) { return e.mapping == name; });
  };
  // A mapping that read `source` and does not run now stopped at the base at the latest: the
  // position through which this or an earlier holder applied it (an earlier entry wins; later
  // ones never replace it).
  for (const auto& [name, g] : gone_) {
    if (find_mapping(next, name) != nullptr || has_entry(name) ||
        !contains(g.reads, source.collection()))
      continue;
    const auto& at = out.from;
    if (!at.resume_after) {
      out.unknown.push_back(name);
      continue;
    }
    out.entries.push_back({name, g.fingerprint, *at.resume_after, at.token_time, at.filter});
  }
  // One put back with the definition it stopped with replays from its entry; one put back
  // changed is backfilled instead (its entry goes either way).
  std::map<std::string, stop_point, std::less<>> back;
  std::erase_if(out.entries, [&](const stopped_mapping& e) {
    const mapping* m = find_mapping(next, e.mapping);
    if (m == nullptr) return false;
    if (m->fingerprint() == e.fingerprint)
      back.emplace(e.mapping, stop_point{source, e.token, e.token_time, e.filter});
    return true;
  });
  if (!back.empty()) {
    out.replayed = replay_from(out.from, back);
    out.from = out.replayed->from;
  }
  const bool rewound = out.replayed && out.replayed->rewound;
  out.store = (rewound || out.entries != stored) && out.from.resume_after.has_value();
  return out;
}

}  // namespace denormd::mapping
