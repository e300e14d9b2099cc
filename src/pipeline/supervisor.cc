#include "pipeline/supervisor.h"

#include <cassert>
#include <ranges>

#include "common/clock.h"

namespace denormd::pipeline {

namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

void stop_in_order(const std::vector<pipeline*>& which) {
  for (auto* p : which)
    p->stop_reading();
  for (auto* p : which)
    p->join_reading();
  for (auto* p : which)
    p->finish();
  for (auto* p : which)
    p->join();
}

}  // namespace

supervisor::supervisor(parts_factory& parts, metrics::metrics& m, pipeline_options opts)
    : parts_(parts), metrics_(m), opts_(std::move(opts)) {
  lag_thread_ = std::jthread([this](std::stop_token stop) { report_lag(stop); });
}

supervisor::~supervisor() {
  lag_thread_.request_stop();
  lag_thread_.join();
  stop_all();
}

void supervisor::report_lag(std::stop_token stop) {
  do {
    std::lock_guard lock(mutex_);
    const std::int64_t now = wall_ms();
    for (const auto& p : pipelines_) {
      p->report_lag(now);
      auto& samples = applied_samples_[p->source().unit()];
      const std::uint64_t applied = p->applied_events();
      // A replaced pipeline counts from 0 again: the window starts over.
      if (!samples.empty() && applied < samples.back().second) samples.clear();
      samples.emplace_back(now, applied);
      while (samples.size() > 1 &&
             now - samples.front().first > std::chrono::milliseconds(rate_window).count())
        samples.pop_front();
    }
    if (now - last_sample_ms_ >= std::chrono::milliseconds(lag_sample_interval).count()) {
      last_sample_ms_ = now;
      for (const auto& p : pipelines_) {
        auto& samples = lag_history_[p->source().unit()];
        samples.push_back({now, p->lag_seconds(now)});
        if (samples.size() > lag_samples_kept) samples.pop_front();
      }
    }
    for (const auto& [name, at] : applied_through_locked())
      metrics_.set_applied_through(name, at.t);
  } while (sleep_unless_stopped(stop, std::chrono::seconds(1)));
}

std::map<std::string, bson::timestamp, std::less<>> supervisor::applied_through_locked() const {
  std::map<std::string, bson::timestamp, std::less<>> out;
  for (const auto& p : pipelines_) {
    const bson::timestamp at = p->applied_through().value_or(bson::timestamp{0, 0});
    for (const auto& name : p->planner().mappings_reading(p->source())) {
      auto [it, fresh] = out.emplace(name, at);
      if (!fresh && at < it->second) it->second = at;
    }
  }
  return out;
}

std::optional<bson::timestamp> supervisor::applied_through(std::string_view name) const {
  std::lock_guard lock(mutex_);
  const auto all = applied_through_locked();
  if (!name.empty()) {
    const auto it = all.find(name);
    if (it == all.end()) return std::nullopt;
    return it->second;
  }
  if (all.empty()) return std::nullopt;
  bson::timestamp lowest = all.begin()->second;
  for (const auto& [n, at] : all) {
    if (at < lowest) lowest = at;
  }
  return lowest;
}

std::vector<std::pair<std::string, bson::timestamp>> supervisor::stored_positions() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, bson::timestamp>> out;
  for (const auto& p : pipelines_) {
    if (const auto at = p->stored_through()) out.emplace_back(p->source().unit(), *at);
  }
  return out;
}

std::size_t supervisor::find(const mapping::ns& source) const {
  for (std::size_t i = 0; i < pipelines_.size(); ++i) {
    if (pipelines_[i]->source() == source) return i;
  }
  return npos;
}

std::unique_ptr<pipeline> supervisor::take(const mapping::ns& source) {
  std::lock_guard lock(mutex_);
  const std::size_t i = find(source);
  if (i == npos) return nullptr;
  auto p = std::move(pipelines_[i]);
  pipelines_.erase(pipelines_.begin() + static_cast<std::ptrdiff_t>(i));
  return p;
}

void supervisor::start(const mapping::ns& source, std::shared_ptr<const mapping::planner> planner,
                       start_position from) {
  auto p = std::make_unique<pipeline>(source, std::move(planner), std::move(from), parts_, metrics_,
                                      opts_);
  pipeline& started = *p;
  {
    std::lock_guard lock(mutex_);
    assert(find(source) == npos && "one pipeline per namespace");
    pipelines_.push_back(std::move(p));
  }
  started.start();
}

std::uint64_t supervisor::stop(const mapping::ns& source) {
  auto p = take(source);
  if (!p) return 0;
  stop_in_order({p.get()});
  return p->applied_events();
}

std::optional<start_position> supervisor::hand_over(const mapping::ns& source) {
  auto old = take(source);
  if (!old) return std::nullopt;
  stop_in_order({old.get()});
  return old->resume_position();
}

bool supervisor::replace(const mapping::ns& source,
                         std::shared_ptr<const mapping::planner> planner) {
  auto from = hand_over(source);
  if (!from) return false;
  start(source, std::move(planner), std::move(*from));
  return true;
}

std::uint64_t supervisor::stop_all() {
  // Only this thread changes the list, so reading it here needs no lock.
  std::vector<pipeline*> which;
  for (auto& p : std::views::reverse(pipelines_))
    which.push_back(p.get());
  stop_in_order(which);
  std::uint64_t applied = 0;
  for (auto* p : which)
    applied += p->applied_events();
  return applied;
}

std::optional<pipeline_status> supervisor::status(const mapping::ns& source) const {
  std::lock_guard lock(mutex_);
  const std::size_t i = find(source);
  if (i == npos) return std::nullopt;
  const std::int64_t now = wall_ms();
  const auto& p = *pipelines_[i];
  pipeline_status s{p.ready(), p.state(), p.lag_seconds(now), p.checkpoint_age_seconds(now),
                    p.applied_events()};
  s.applied_through = p.applied_through();
  s.last_event_ms = p.last_event_ms();
  s.errors = p.errors();
  if (const auto it = applied_samples_.find(source.unit());
      it != applied_samples_.end() && it->second.size() > 1) {
    const auto& [from_ms, from_n] = it->second.front();
    const auto& [to_ms, to_n] = it->second.back();
    if (to_ms > from_ms)
      s.events_per_second =
          static_cast<double>(to_n - from_n) * 1000.0 / static_cast<double>(to_ms - from_ms);
  }
  return s;
}

std::vector<lag_sample> supervisor::lag_history(const mapping::ns& source) const {
  std::lock_guard lock(mutex_);
  const auto it = lag_history_.find(source.unit());
  if (it == lag_history_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

}  // namespace denormd::pipeline
