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

lease_machine::lease_machine(std::string me, std::vector<std::string> units, std::int64_t ttl_ms,
                             std::int64_t margin_ms)
    : me_(std::move(me)), units_(sorted(std::move(units))), ttl_ms_(ttl_ms), margin_ms_(margin_ms) {
  assert(margin_ms_ >= 0 && margin_ms_ < ttl_ms_);
}

std::vector<lease_action> lease_machine::decide(std::int64_t now_ms,
                                                const std::vector<std::string>& live,
                                                const std::vector<lease_row>& table,
                                                bool stopping) const {
  std::vector<std::string> members = live;
  if (std::find(members.begin(), members.end(), me_) == members.end()) members.push_back(me_);
  std::vector<lease_action> out;
  for (const auto& unit : units_) {
    const auto held = held_.find(unit);
    if (held != held_.end()) {
      const std::int64_t epoch = held->second.epoch;
      if (now_ms >= held->second.deadline_ms) {
        out.push_back({lease_action::kind::drop, unit, epoch});
      } else if (stopping || owner_of(unit, members) != me_) {
        out.push_back({lease_action::kind::release, unit, epoch});
      } else {
        out.push_back({lease_action::kind::renew, unit, epoch});
      }
      continue;
    }
    if (stopping || owner_of(unit, members) != me_) continue;
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
