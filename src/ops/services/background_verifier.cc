#include "ops/services/background_verifier.h"

#include <algorithm>

#include "bson/identical.h"
#include "common/clock.h"
#include "common/log.h"
#include "mapping/reference.h"
#include "ops/commands/backfiller.h"
#include "ops/commands/verifier.h"
#include "ops/services/mapping_versions.h"

namespace denormd::ops {

namespace {

using steady = std::chrono::steady_clock;

// How often a confirmation looks at the stream's applied position.
constexpr std::chrono::milliseconds settle_poll{20};
// At most this many drifted dependents per mapping are remembered between passes (so a pass
// over a collection that drifted wholesale stays bounded in memory; beyond it they are
// counted again by the next pass).
constexpr std::size_t max_remembered = 100000;

// The paths that differ, the first few of them (a rebuilt array differs at every index).
std::string joined(const std::vector<std::string>& paths) {
  constexpr std::size_t shown = 8;
  std::string out;
  for (std::size_t i = 0; i < paths.size() && i < shown; ++i)
    out += (out.empty() ? "" : ", ") + paths[i];
  if (paths.size() > shown) out += " and " + std::to_string(paths.size() - shown) + " more";
  return out;
}

// Sleeps until `at` unless stopped first; false when stopped.
bool sleep_until(std::stop_token stop, steady::time_point at) {
  const auto now = steady::now();
  if (at <= now) return !stop.stop_requested();
  return sleep_unless_stopped(stop, std::chrono::ceil<std::chrono::milliseconds>(at - now));
}

}  // namespace

background_verifier::background_verifier(mongo::connection& conn, metrics::metrics& m,
                                         std::string meta_db, planner_fn planner,
                                         applied_fn applied, background_verify_options opts)
    : conn_(conn),
      metrics_(m),
      meta_db_(std::move(meta_db)),
      planner_(std::move(planner)),
      applied_(std::move(applied)),
      opts_(opts) {}

background_verifier::~background_verifier() {
  stop();
}

void background_verifier::start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      const auto began = steady::now();
      if (!pass(stop)) return;
      const auto took = steady::now() - began;
      if (took > opts_.interval + opts_.interval / 10) {
        log::warn("verify",
                  "a background verify pass took longer than --verify-interval; the next starts "
                  "at once (a longer interval, or fewer dependents, keeps the read load as set)",
                  {{"took_s", std::chrono::duration<double>(took).count()},
                   {"interval_s", std::chrono::duration<double>(opts_.interval).count()}});
      }
      if (!sleep_until(stop, began + opts_.interval)) return;
    }
  });
}

void background_verifier::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool background_verifier::pass(std::stop_token stop) {
  current_ = planner_();
  const mapping::planner* planner = current_.get();
  auto versions = read_versions(conn_, meta_db_);
  if (!versions) {
    metrics_.count_error("verify", versions.error().metric_code());
    log::warn("verify", "cannot read the recorded mappings; this background verify pass is skipped",
              {{"error", versions.error().to_string()}});
    return !stop.stop_requested();
  }
  // The mappings this instance streams, with the definition it runs, backfilled (or left to
  // `denormd backfill` by --no-auto-backfill): their dependents should hold now.
  std::vector<const mapping::mapping*> which;
  for (const auto& m : planner->mappings()) {
    if (!applied_(m)) continue;
    const auto v = std::find_if(versions->begin(), versions->end(),
                                [&](const mapping_version& r) { return r.name == m.name; });
    if (v == versions->end() || v->fingerprint != m.fingerprint() || v->removed ||
        v->backfill == backfill_state::running || v->backfill == backfill_state::pending)
      continue;
    which.push_back(&m);
    metrics_.declare_verify(m.name);  // from the first pass, for increase() in alerts
  }
  // The reads are paced by the documents the targets hold now: one interval for them all.
  std::uint64_t total = 0;
  for (const auto* m : which)
    total += count_documents(conn_, m->target).value_or(0);
  const auto began = steady::now();
  const auto per_document = opts_.interval / std::max<std::uint64_t>(total, 1);
  std::uint64_t walked = 0;
  const std::function<bool(std::size_t)> pace = [&](std::size_t n) {
    walked += n;
    return sleep_until(stop, began + per_document * static_cast<std::int64_t>(walked));
  };
  for (const auto* m : which) {
    if (stop.stop_requested()) return false;
    if (verify_mapping(*m, pace, stop)) {
      metrics_.set_verify_last_pass(m->name, static_cast<double>(wall_ms()) / 1000.0);
    }
  }
  return !stop.stop_requested();
}

bool background_verifier::verify_mapping(const mapping::mapping& m,
                                         const std::function<bool(std::size_t)>& pace,
                                         std::stop_token stop) {
  verifier check(conn_, *current_, metrics_, meta_db_);
  suspects found;
  id_set drifted;
  std::optional<mongo::driver_error> failed;
  verify_options o;
  o.batch_size = opts_.batch_size;
  o.max_examples = 0;
  o.on_drift = [&](const mapping::mapping&, const drift_example& e, const bson::document& read) {
    // A dependent whose _id could read as a query cannot be re-read by it: left alone.
    if (!mapping::reference_problem(e.id)) found.emplace(e.id, suspect{e.paths, read});
  };
  o.after_batch = [&](std::size_t n) {
    if (found.size() >= opts_.batch_size) {
      if (auto st = confirm(m, std::exchange(found, {}), drifted, stop); !st) {
        failed = st.error();
        return false;
      }
    }
    return pace(n);
  };
  auto walked = check.run({&m}, o, stop);
  if (!failed && walked && !found.empty()) {
    if (auto st = confirm(m, std::exchange(found, {}), drifted, stop); !st) failed = st.error();
  }
  if (!failed && !walked) failed = walked.error();
  if (failed) {
    metrics_.count_error("verify", failed->metric_code());
    log::warn("verify", "the background verify of a mapping failed; it is verified again next pass",
              {{"mapping", m.name}, {"error", failed->to_string()}});
  }
  const bool complete = !failed && walked->complete && !stop.stop_requested();
  auto& left = left_drifted_[m.name];
  if (complete) {
    left = std::move(drifted);
  } else {
    left.merge(drifted);
  }
  return complete;
}

mongo::status background_verifier::confirm(const mapping::mapping& m, suspects found,
                                           id_set& drifted, std::stop_token stop) {
  verifier check(conn_, *current_, metrics_, meta_db_);
  verify_options o;
  o.batch_size = opts_.batch_size;
  o.max_examples = 0;
  const std::size_t suspected = found.size();
  for (int round = 0; round < opts_.confirm_rounds && !found.empty(); ++round) {
    auto at = conn_.operation_time();
    if (!at) return at.error();
    if (!settled(m, *at, stop)) {
      if (!stop.stop_requested()) {
        log::info("verify",
                  "the stream did not apply past the verify's read in time; its suspects wait for "
                  "the next pass",
                  {{"mapping", m.name}, {"dependents", found.size()}});
      }
      return {};
    }
    bson::array ids;
    for (const auto& [id, s] : found)
      ids.push_back(id);
    suspects still;
    o.only_ids = std::move(ids);
    o.on_drift = [&](const mapping::mapping&, const drift_example& e, const bson::document& read) {
      // Rewritten since the last read: the stream applied something to it, so what differed
      // may have been in flight; not drift (a busy dependent stays a suspect no longer).
      const auto was = found.find(e.id);
      if (was != found.end() && bson::identical(was->second.read, read))
        still.emplace(e.id, suspect{e.paths, read});
    };
    auto again = check.run({&m}, o, stop);
    if (!again) return again.error();
    if (stop.stop_requested()) return {};
    found = std::move(still);
  }
  if (found.size() < suspected) {
    log::debug("verify", "in flight, not drift: the stream applied what differed",
               {{"mapping", m.name}, {"dependents", suspected - found.size()}});
  }
  if (found.empty()) return {};

  const id_set& before = left_drifted_[m.name];
  std::uint64_t fresh = 0;
  bson::array ids;
  for (const auto& [id, s] : found) {
    ids.push_back(id);
    if (before.contains(id)) continue;  // logged and counted when first found
    ++fresh;
    log::warn(
        "verify",
        opts_.repair ? "drift found; repairing it"
                     : "drift found; left as it is (--verify-no-repair)",
        {{"mapping", m.name}, {"_id", mapping::describe_value(id)}, {"fields", joined(s.paths)}});
  }
  metrics_.count_drift_found(m.name, fresh);
  if (!opts_.repair) {
    for (const auto& entry : found) {
      if (drifted.size() < max_remembered) drifted.insert(entry.first);
    }
    return {};
  }
  o.only_ids = std::move(ids);
  o.on_drift = nullptr;
  o.repair = true;
  auto repaired = check.run({&m}, o, stop);
  if (!repaired) return repaired.error();
  metrics_.count_drift_repaired(m.name, repaired->repaired());
  return {};
}

bool background_verifier::settled(const mapping::mapping& m, bson::timestamp t,
                                  std::stop_token stop) {
  const auto deadline = steady::now() + opts_.settle_timeout;
  while (true) {
    const auto at = applied_(m);
    if (!at) return false;
    if (!(*at < t)) return true;
    if (steady::now() >= deadline) return false;
    if (!sleep_unless_stopped(stop, settle_poll)) return false;
  }
}

}  // namespace denormd::ops
