#include "ops/services/auto_backfill.h"

#include <algorithm>

#include "common/log.h"
#include "common/retry.h"
#include "ops/commands/backfiller.h"
#include "ops/services/mapping_versions.h"
#include "ops/services/streamed_sets.h"

namespace denormd::ops {

namespace {

std::string joined_names(const std::vector<const mapping::mapping*>& which) {
  std::string out;
  for (const auto* m : which)
    out += (out.empty() ? "" : ", ") + m->name;
  return out;
}

// The streams that do not run the new definitions yet, or why they could not be read.
struct streams_pending {
  std::optional<mongo::driver_error> error;
  std::vector<std::string> streams;
};

// Waits until the stream of every namespace `which` reads plans with their definitions
// (ops/streamed_sets.h): with --ha, instances that have not reloaded yet may still stream them
// with the old ones. False when stopped first.
bool streams_run(mongo::connection& conn, const std::string& meta_db, metrics::metrics& m,
                 const std::vector<const mapping::mapping*>& which,
                 const std::vector<mapping::ns>& units, std::stop_token& stop) {
  backoff retry(std::chrono::milliseconds(200), std::chrono::seconds(5));
  bool told = false;
  // Streams still running the old definitions are a failure to wait out, like an error.
  auto attempt = [&]() -> expected<void, streams_pending> {
    auto pending = not_streamed(conn, meta_db, which, units);
    if (!pending) return streams_pending{pending.error(), {}};
    if (pending->empty()) return {};
    return streams_pending{std::nullopt, std::move(*pending)};
  };
  auto failed = [&](const streams_pending& pending, const retry_state&) {
    if (pending.error) {
      m.count_error("backfill", pending.error->metric_code());
      log::warn("backfill", "cannot read which mappings the streams run; retrying",
                {{"collection", meta_db + "." + streamed_collection},
                 {"error", pending.error->to_string()}});
    } else if (!told) {
      std::string streams;
      for (const auto& s : pending.streams)
        streams += (streams.empty() ? "" : ", ") + s;
      log::info("backfill",
                "waiting until the streams of what it reads run the new definitions (an instance "
                "streaming them has not reloaded yet)",
                {{"mappings", joined_names(which)}, {"streams", streams}});
      told = true;
    }
    return retry_verdict::retry;
  };
  return retry_with_backoff(stop, retry, attempt, failed).has_value();
}

}  // namespace

auto_backfill::auto_backfill(mongo::connection& conn,
                             std::shared_ptr<const mapping::planner> planner, metrics::metrics& m,
                             std::string meta_db, bool wait_for_streams)
    : conn_(conn),
      planner_(std::move(planner)),
      metrics_(m),
      meta_db_(std::move(meta_db)),
      wait_for_streams_(wait_for_streams) {}

auto_backfill::~auto_backfill() {
  stop();
}

void auto_backfill::start(std::int64_t now_ms, bool backfill) {
  thread_ =
      std::jthread([this, now_ms, backfill](std::stop_token stop) { run(now_ms, backfill, stop); });
}

void auto_backfill::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

std::optional<std::vector<const mapping::mapping*>> auto_backfill::stale(std::int64_t now_ms,
                                                                         bool backfill,
                                                                         std::stop_token& stop) {
  backoff retry(std::chrono::seconds(1), std::chrono::seconds(30));
  auto attempt = [&]() -> mongo::result<std::vector<const mapping::mapping*>> {
    auto st = record_mappings(conn_, meta_db_, planner_->mappings(), now_ms, backfill);
    if (!st) return st.error();
    auto versions = read_versions(conn_, meta_db_);
    if (!versions) return versions.error();
    std::vector<const mapping::mapping*> out;
    for (const auto& m : planner_->mappings()) {
      const auto v = std::find_if(versions->begin(), versions->end(),
                                  [&](const mapping_version& x) { return x.name == m.name; });
      const bool current = v != versions->end() && v->fingerprint == m.fingerprint() &&
                           v->backfill == backfill_state::done;
      if (!current) out.push_back(&m);
    }
    return out;
  };
  auto out = retry_with_backoff(
      stop, retry, attempt, [&](const mongo::driver_error& e, const retry_state& s) {
        metrics_.count_error("backfill", e.metric_code());
        log::warn("backfill", "cannot record the running mappings; retrying",
                  {{"collection", meta_db_ + "." + mappings_collection},
                   {"error", e.to_string()},
                   {"retry_in_ms", static_cast<std::int64_t>(s.retry_in.count())}});
        return retry_verdict::retry;
      });
  if (!out) return std::nullopt;
  return std::move(**out);
}

void auto_backfill::run(std::int64_t now_ms, bool enabled, std::stop_token stop) {
  auto which = stale(now_ms, enabled, stop);
  if (!which || which->empty()) return;
  const std::string names = joined_names(*which);
  if (!enabled) {
    log::warn("daemon",
              "new or changed mappings are not backfilled (--no-auto-backfill or --dry-run): "
              "documents written before they became active may have the old shape until "
              "denormd backfill runs",
              {{"mappings", names}});
    return;
  }
  for (const auto* m : *which)
    metrics_.set_backfill_progress(m->name, 0);
  // A change the old definition applies after our read of a document would never reach it.
  if (wait_for_streams_ &&
      !streams_run(conn_, meta_db_, metrics_, *which, planner_->watched_namespaces(), stop))
    return;
  log::info("backfill", "new or changed mappings are backfilled while the streams run",
            {{"mappings", names}});
  backfill(std::move(*which), stop);
}

void auto_backfill::backfill(std::vector<const mapping::mapping*> left, std::stop_token& stop) {
  const std::string names = joined_names(left);
  backfill_options opts;
  opts.log_progress = true;
  opts.on_progress = [this](const backfill_progress& p) {
    double share = p.done ? 1.0 : 0.0;
    if (!p.done && p.total && *p.total > 0)
      share = std::min(1.0, static_cast<double>(p.documents) / static_cast<double>(*p.total));
    metrics_.set_backfill_progress(p.mapping, share);
  };
  backoff retry(std::chrono::seconds(1), std::chrono::seconds(30));
  auto attempt = [&]() -> mongo::status {
    while (!stop.stop_requested() && !left.empty()) {
      backfiller runner(conn_, *planner_, metrics_, meta_db_);
      auto outcome = runner.run(left, opts, stop);
      if (!outcome) return outcome.error();
      // The finished ones are done for good; a stop leaves the rest to the next start.
      for (const auto& mb : outcome->mappings) {
        if (!mb.done) continue;
        std::erase_if(left, [&](const mapping::mapping* m) { return m->name == mb.mapping; });
      }
      if (outcome->complete) break;
    }
    return {};
  };
  auto failed = [&](const mongo::driver_error& e, const retry_state& s) {
    metrics_.count_error("backfill", e.metric_code());
    log::warn(
        "backfill", "automatic backfill failed; it continues from its stored progress",
        {{"error", e.to_string()}, {"retry_in_ms", static_cast<std::int64_t>(s.retry_in.count())}});
    return retry_verdict::retry;
  };
  if (!retry_with_backoff(stop, retry, attempt, failed)) return;
  if (left.empty())
    log::info("backfill", "new and changed mappings are backfilled", {{"mappings", names}});
}

}  // namespace denormd::ops
