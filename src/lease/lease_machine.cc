#include "lease/lease_machine.h"

#include <algorithm>
#include <cassert>

#include "common/fnv.h"

namespace denormd::lease {

namespace {

// splitmix64's finalizer: FNV alone leaves the scores of similar names correlated.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t score(const std::string& unit, const std::string& instance) {
  return mix(fnv1a(instance, fnv1a(unit) ^ 0x9e3779b97f4a7c15ULL));
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::string collection_of(const std::string& unit) {
  const auto hash = unit.rfind('#');
  const auto slash = unit.rfind('/');
  if (hash == std::string::npos || slash == std::string::npos || slash < hash + 2 ||
      slash + 1 == unit.size())
    return unit;
  const auto digits = [&](std::size_t from, std::size_t to) {
    return std::all_of(unit.begin() + static_cast<std::ptrdiff_t>(from),
                       unit.begin() + static_cast<std::ptrdiff_t>(to),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(hash + 1, slash) && digits(slash + 1, unit.size()) ? unit.substr(0, hash) : unit;
}

std::string owner_of(const std::string& unit, const std::vector<std::string>& live) {
  const std::string* best = nullptr;
  std::uint64_t best_score = 0;
  for (const auto& instance : live) {
    const std::uint64_t s = score(unit, instance);
    // Ties (practically never) go to the smaller name, so every instance agrees.
    if (best == nullptr || s > best_score || (s == best_score && instance < *best)) {
      best = &instance;
      best_score = s;
    }
  }
  return best != nullptr ? *best : std::string();
}

namespace {

// assign_units for one class of units.
std::map<std::string, std::string> assign_class(const std::vector<std::string>& units,
                                                const std::vector<std::string>& live,
                                                const std::vector<lease_row>& table) {
  std::map<std::string, std::string> out;
  if (live.empty() || units.empty()) return out;
  std::vector<std::string> members = sorted(live);
  members.erase(std::unique(members.begin(), members.end()), members.end());
  // The holders as the table says, where they are live and their lease has not expired.
  std::map<std::string, std::string> holder;
  std::map<std::string, std::size_t> load;
  for (const auto& r : table) {
    if (r.owner.empty() || r.expired) continue;
    if (!std::binary_search(members.begin(), members.end(), r.owner)) continue;
    if (!std::binary_search(units.begin(), units.end(), r.unit)) continue;
    holder[r.unit] = r.owner;
    ++load[r.owner];
  }
  // Shares: units / instances each, one more for the first (units % instances) of them, those
  // that hold the most now first (so that the fewest units move), then by name.
  std::vector<std::string> by_load = members;
  std::stable_sort(by_load.begin(), by_load.end(),
                   [&](const std::string& a, const std::string& b) { return load[a] > load[b]; });
  const std::size_t base = units.size() / members.size();
  const std::size_t extra = units.size() % members.size();
  std::map<std::string, std::size_t> share;
  for (std::size_t i = 0; i < by_load.size(); ++i)
    share[by_load[i]] = base + (i < extra ? 1 : 0);
  // Each holder keeps, of the units it holds, those it scores highest, up to its share.
  std::map<std::string, std::size_t> given;
  std::map<std::string, std::vector<std::string>> held_by;
  for (const auto& unit : units) {
    if (const auto h = holder.find(unit); h != holder.end()) held_by[h->second].push_back(unit);
  }
  for (auto& [h, mine] : held_by) {
    std::stable_sort(mine.begin(), mine.end(),
                     [&, h = h](const std::string& a, const std::string& b) {
                       return score(a, h) > score(b, h);
                     });
    for (std::size_t i = 0; i < mine.size() && i < share[h]; ++i) {
      out[mine[i]] = h;
      ++given[h];
    }
  }
  std::vector<std::string> moving;
  for (const auto& unit : units) {
    if (!out.contains(unit)) moving.push_back(unit);
  }
  for (const auto& unit : moving) {
    std::vector<std::string> open;
    for (const auto& m : members) {
      if (given[m] < share[m]) open.push_back(m);
    }
    const std::string to = owner_of(unit, open);
    out[unit] = to;
    ++given[to];
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> assign_units(const std::vector<std::string>& unsorted,
                                                const std::vector<std::string>& live,
                                                const std::vector<lease_row>& table) {
  // Namespaces, jobs and the partitions of each partitioned namespace are shared out apart, so
  // that each is even: one hot collection's partitions spread over the instances whatever the
  // other units do.
  std::map<std::string, std::vector<std::string>> classes;
  for (const auto& unit : sorted(unsorted)) {
    const std::string coll = collection_of(unit);
    if (coll != unit) {
      classes["partitions of " + coll].push_back(unit);
    } else {
      classes[unit.find('.') != std::string::npos ? "streams" : "jobs"].push_back(unit);
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, units] : classes)
    out.merge(assign_class(units, live, table));
  return out;
}

lease_machine::lease_machine(std::string me, std::vector<std::string> units, std::int64_t ttl_ms,
                             std::int64_t margin_ms)
    : me_(std::move(me)), units_(sorted(std::move(units))), ttl_ms_(ttl_ms), margin_ms_(margin_ms) {
  assert(margin_ms_ >= 0 && margin_ms_ < ttl_ms_);
}

std::vector<layout_conflict> lease_machine::conflicts(const std::vector<std::string>& live,
                                                      const std::vector<lease_row>& table) const {
  std::map<std::string, layout_conflict> found;  // by collection
  for (const auto& r : table) {
    if (r.owner.empty() || r.owner == me_ || r.expired) continue;
    if (std::find(live.begin(), live.end(), r.owner) == live.end()) continue;
    if (std::find(units_.begin(), units_.end(), r.unit) != units_.end()) continue;
    const std::string coll = collection_of(r.unit);
    if (coll.find('.') == std::string::npos) continue;  // a job, not a stream
    for (const auto& mine : units_) {
      if (collection_of(mine) != coll) continue;
      auto& c = found[coll];
      c.collection = coll;
      c.mine = mine;
      c.theirs = r.unit;
      c.holder = r.owner;
      // One instance keeps what it holds, the same on both: the lower name.
      c.yield = c.yield || r.owner < me_;
      break;
    }
  }
  std::vector<layout_conflict> out;
  for (auto& [coll, c] : found)
    out.push_back(std::move(c));
  return out;
}

std::vector<lease_action> lease_machine::decide(std::int64_t now_ms,
                                                const std::vector<std::string>& live,
                                                const std::vector<lease_row>& table,
                                                bool stopping) const {
  std::vector<std::string> members = live;
  if (std::find(members.begin(), members.end(), me_) == members.end()) members.push_back(me_);
  // What this instance holds counts as held whatever the table it read says.
  std::vector<lease_row> rows = table;
  for (const auto& [unit, h] : held_) {
    auto r =
        std::find_if(rows.begin(), rows.end(), [&](const lease_row& x) { return x.unit == unit; });
    if (r == rows.end()) {
      rows.push_back({unit, me_, h.epoch, false});
    } else if (r->owner == me_) {
      r->expired = false;
    }
  }
  // A namespace another live instance reads in another layout of partitions is not taken;
  // what is held of it is kept only by the instance that keeps its own (the lower name).
  const std::vector<layout_conflict> clashes = conflicts(members, table);
  const auto blocked = [&](const std::string& unit) {
    const std::string coll = collection_of(unit);
    return std::any_of(clashes.begin(), clashes.end(), [&](const layout_conflict& c) {
      return c.collection == coll && (c.yield || held_.count(unit) == 0);
    });
  };
  const auto owners = assign_units(units_, members, rows);
  const auto owner = [&](const std::string& unit) {
    if (blocked(unit)) return std::string();
    const auto it = owners.find(unit);
    return it != owners.end() ? it->second : std::string();
  };
  std::vector<lease_action> out;
  for (const auto& unit : units_) {
    const auto held = held_.find(unit);
    if (held != held_.end()) {
      const std::int64_t epoch = held->second.epoch;
      if (now_ms >= held->second.deadline_ms) {
        out.push_back({lease_action::kind::drop, unit, epoch});
      } else if (stopping || owner(unit) != me_) {
        out.push_back({lease_action::kind::release, unit, epoch});
      } else {
        out.push_back({lease_action::kind::renew, unit, epoch});
      }
      continue;
    }
    if (stopping || owner(unit) != me_) continue;
    const auto row = std::find_if(table.begin(), table.end(),
                                  [&](const lease_row& r) { return r.unit == unit; });
    const bool free = row == table.end() || row->owner.empty() || row->expired ||
                      row->owner == me_;  // ours from an earlier life with the same id
    if (free) out.push_back({lease_action::kind::acquire, unit, 0});
  }
  return out;
}

void lease_machine::set_units(std::vector<std::string> units) {
  units_ = sorted(std::move(units));
}

void lease_machine::acquired(const std::string& unit, std::int64_t epoch, std::int64_t sent_ms) {
  held_[unit] = held_lease{epoch, sent_ms + ttl_ms_ - margin_ms_};
}

void lease_machine::renewed(const std::string& unit, std::int64_t sent_ms) {
  const auto it = held_.find(unit);
  if (it != held_.end()) it->second.deadline_ms = sent_ms + ttl_ms_ - margin_ms_;
}

void lease_machine::dropped(const std::string& unit) {
  held_.erase(unit);
}

std::optional<std::int64_t> lease_machine::deadline(const std::string& unit) const {
  const auto it = held_.find(unit);
  if (it == held_.end()) return std::nullopt;
  return it->second.deadline_ms;
}

}  // namespace denormd::lease
