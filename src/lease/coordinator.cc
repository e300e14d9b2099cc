#include "lease/coordinator.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"

namespace denormd::lease {

coordinator::coordinator(lease_table& store, metrics::metrics& m, coordinator_options opts,
                         unit_hooks hooks)
    : store_(store),
      metrics_(m),
      opts_(std::move(opts)),
      hooks_(std::move(hooks)),
      machine_(opts_.instance_id, opts_.units, opts_.ttl.count(), opts_.ttl.count() / 5) {}

coordinator::~coordinator() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void coordinator::start() {
  log::info("lease", "taking part in the lease protocol",
            {{"instance", opts_.instance_id},
             {"units", static_cast<int>(opts_.units.size())},
             {"ttl_ms", static_cast<std::int64_t>(opts_.ttl.count())}});
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void coordinator::run(std::stop_token stop) {
  do {
    round();
  } while (sleep_unless_stopped(stop, next_round(round_every())));
}

std::chrono::milliseconds coordinator::round_every() const {
  return std::max(std::chrono::milliseconds(50), opts_.ttl / 3);
}

std::chrono::milliseconds coordinator::next_round(std::chrono::milliseconds every) const {
  std::lock_guard lock(mutex_);
  if (!next_expiry_ms_) return every;
  // Just after that lease expires (and its owner's heartbeat, renewed in the same round).
  return std::clamp(std::chrono::milliseconds(*next_expiry_ms_ + 50), std::chrono::milliseconds(50),
                    every);
}

void coordinator::drain() {
  // No lock: a round may hold it across server calls, and a stop must not wait for them.
  draining_ = true;
}

void coordinator::round() {
  std::lock_guard lock(mutex_);
  const std::int64_t sent = steady_ms();
  std::vector<std::string> mine;
  for (const auto& [unit, held] : machine_.held())
    mine.push_back(unit);
  const bson::document report = hooks_.report ? hooks_.report() : bson::document{};
  if (auto st = store_.heartbeat(opts_.instance_id, mine, report); !st) {
    metrics_.count_error("lease", st.error().metric_code());
    log::warn("lease", "heartbeat failed", {{"error", st.error().to_string()}});
  }
  // On a failed read the last one stands in: renewals and deadlines do not depend on it.
  if (auto live = store_.live(); live) {
    live_ = std::move(*live);
  } else {
    metrics_.count_error("lease", live.error().metric_code());
  }
  if (auto table = store_.table(); table) {
    table_.clear();
    next_expiry_ms_.reset();
    for (auto& e : *table) {
      if (!e.row.owner.empty() && e.row.owner != opts_.instance_id && !e.row.expired) {
        next_expiry_ms_ = std::min(next_expiry_ms_.value_or(e.remaining_ms), e.remaining_ms);
      }
      table_.push_back(std::move(e.row));
    }
  } else {
    metrics_.count_error("lease", table.error().metric_code());
  }
  const bool me_listed = std::find(live_.begin(), live_.end(), opts_.instance_id) != live_.end();
  metrics_.set_instances(live_.size() + (me_listed ? 0 : 1));

  // The leases held come first, and acquisitions stop once a round's time is up: a row that
  // cannot be taken yet (written by another holder's open transaction) costs its statement's
  // time limit, never a renewal.
  note_conflicts(machine_.conflicts(live_, table_));
  auto actions = machine_.decide(sent, live_, table_, false);
  std::stable_partition(actions.begin(), actions.end(), [](const lease_action& a) {
    return a.what != lease_action::kind::acquire;
  });
  for (const auto& a : actions) {
    if (stopping_) break;  // what is left is released or expires; the stop must not wait
    switch (a.what) {
      case lease_action::kind::acquire: {
        if (draining_ || steady_ms() - sent >= round_every().count()) break;
        const auto row = std::find_if(table_.begin(), table_.end(),
                                      [&](const lease_row& r) { return r.unit == a.unit; });
        acquire(a.unit, sent, row != table_.end() && !row->owner.empty());
        break;
      }
      case lease_action::kind::renew:
        renew(a.unit, a.epoch, sent);
        break;
      case lease_action::kind::release:
        // Kept renewed until its pipeline has stopped and released() is called (unless the
        // renewal finds it taken: then it is gone already).
        renew(a.unit, a.epoch, sent);
        if (!draining_ && machine_.held().contains(a.unit) && releasing_.insert(a.unit).second) {
          log::info("lease", "giving a namespace up to the instance it belongs to now",
                    {{"unit", a.unit}});
          hooks_.stop(a.unit, true);
        }
        break;
      case lease_action::kind::drop:
        log::warn("lease", "lease not renewed before its deadline; stopped writing the namespace",
                  {{"unit", a.unit}, {"epoch", a.epoch}});
        forget(a.unit, "lost");
        hooks_.stop(a.unit, false);
        break;
    }
  }
}

void coordinator::acquire(const std::string& unit, std::int64_t sent_ms, bool taken_over) {
  auto epoch = store_.acquire(unit, opts_.instance_id);
  if (!epoch) {
    metrics_.count_error("lease", epoch.error().metric_code());
    log::warn("lease", "could not take a lease",
              {{"unit", unit}, {"error", epoch.error().to_string()}});
    return;
  }
  if (!*epoch) return;  // another instance holds it
  std::int64_t held = **epoch;
  // No holder of an older epoch may write or store a checkpoint from here on.
  auto marked = hooks_.fence(unit, held, taken_over);
  if (marked && *marked > held) {
    // The checkpoint was marked under a newer lease than the table knows (the table was
    // dropped or restored): this lease is the newest now, so it takes the next epoch.
    log::warn("lease",
              "the checkpoint carries a newer lease epoch than the lease table; raising it",
              {{"unit", unit}, {"table_epoch", held}, {"checkpoint_epoch", *marked}});
    auto raised = store_.raise_epoch(unit, opts_.instance_id, held, *marked + 1);
    if (raised && *raised) {
      held = *marked + 1;
      marked = hooks_.fence(unit, held, false);
    }
  }
  if (!marked || *marked != held) {
    const std::string why = marked ? "the checkpoint is held under epoch " + std::to_string(*marked)
                                   : marked.error().to_string();
    if (!marked) metrics_.count_error("lease", marked.error().metric_code());
    log::error("lease", "could not mark the checkpoint with the new lease; giving the lease back",
               {{"unit", unit}, {"epoch", held}, {"error", why}});
    if (auto r = store_.release(unit, opts_.instance_id, held); !r)
      metrics_.count_error("lease", r.error().metric_code());
    return;
  }
  machine_.acquired(unit, held, sent_ms);
  auto deadline = std::make_shared<std::atomic<std::int64_t>>(*machine_.deadline(unit));
  deadlines_[unit] = deadline;
  metrics_.set_lease_held(unit, true);
  metrics_.count_lease_change("acquired");
  log::info("lease", "lease acquired; streaming the namespace", {{"unit", unit}, {"epoch", held}});
  hooks_.start(unit, lease_grant{held, deadline});
}

void coordinator::renew(const std::string& unit, std::int64_t epoch, std::int64_t sent_ms) {
  auto renewed = store_.renew(unit, opts_.instance_id, epoch);
  if (!renewed) {
    // The deadline stands; a later round renews or drops it.
    metrics_.count_error("lease", renewed.error().metric_code());
    log::warn("lease", "could not renew a lease",
              {{"unit", unit}, {"error", renewed.error().to_string()}});
    return;
  }
  if (!*renewed) {
    log::warn("lease", "lease taken by another instance; stopped writing the namespace",
              {{"unit", unit}, {"epoch", epoch}});
    forget(unit, "stolen");
    hooks_.stop(unit, false);
    return;
  }
  machine_.renewed(unit, sent_ms);
  if (auto it = deadlines_.find(unit); it != deadlines_.end())
    it->second->store(*machine_.deadline(unit));
}

void coordinator::forget(const std::string& unit, const char* reason) {
  if (auto it = deadlines_.find(unit); it != deadlines_.end()) {
    it->second->store(0);
    deadlines_.erase(it);
  }
  machine_.dropped(unit);
  releasing_.erase(unit);
  metrics_.set_lease_held(unit, false);
  metrics_.count_lease_change(reason);
}

void coordinator::release_locked(const std::string& unit) {
  const auto it = machine_.held().find(unit);
  if (it == machine_.held().end()) return;
  if (auto st = store_.release(unit, opts_.instance_id, it->second.epoch); !st) {
    metrics_.count_error("lease", st.error().metric_code());
    log::warn("lease", "could not release a lease; it expires on its own",
              {{"unit", unit}, {"error", st.error().to_string()}});
  }
  log::info("lease", "lease released", {{"unit", unit}});
  forget(unit, "released");
}

void coordinator::set_units(std::vector<std::string> units) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> gone;
  for (const auto& [unit, held] : machine_.held()) {
    if (std::find(units.begin(), units.end(), unit) == units.end()) gone.push_back(unit);
  }
  for (const auto& u : gone) {
    release_locked(u);
    releasing_.erase(u);
  }
  for (const auto& u : machine_.units()) {
    if (std::find(units.begin(), units.end(), u) == units.end()) metrics_.remove_lease(u);
  }
  metrics_.declare_leases(units);
  log::info(
      "lease", "the units to share changed",
      {{"units", static_cast<int>(units.size())}, {"released", static_cast<int>(gone.size())}});
  machine_.set_units(std::move(units));
}

void coordinator::released(const std::string& unit) {
  std::lock_guard lock(mutex_);
  if (!releasing_.contains(unit)) return;
  release_locked(unit);
  releasing_.erase(unit);  // also when it was lost meanwhile
}

void coordinator::release_all() {
  stopping_ = true;
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  std::lock_guard lock(mutex_);
  std::vector<std::string> units;
  for (const auto& [unit, held] : machine_.held())
    units.push_back(unit);
  for (const auto& u : units)
    release_locked(u);
  if (auto st = store_.leave(opts_.instance_id); !st)
    metrics_.count_error("lease", st.error().metric_code());
}

void coordinator::note_conflicts(std::vector<layout_conflict> found) {
  std::string text;
  for (const auto& c : found) {
    text += (text.empty() ? "" : "; ") + c.collection + " is read as " + c.theirs +
            " by instance " + c.holder + " but as " + c.mine +
            " here: --partitions must be the same on every instance";
    if (c.yield) text += " (this instance leaves it to " + c.holder + ")";
  }
  if (text != conflicts_) {
    if (!text.empty()) {
      log::error("lease", "another instance reads a namespace in another layout of partitions",
                 {{"detail", text}});
    } else {
      log::info("lease", "no instance reads a namespace in another layout of partitions now");
    }
  }
  conflicts_ = std::move(text);
}

std::string coordinator::layout_conflicts() const {
  std::lock_guard lock(mutex_);
  return conflicts_;
}

std::vector<std::string> coordinator::held_units() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [unit, held] : machine_.held())
    out.push_back(unit);
  return out;
}

}  // namespace denormd::lease
