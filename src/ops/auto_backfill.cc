#include "ops/auto_backfill.h"

#include "common/backoff.h"
#include "common/log.h"
#include "ops/backfiller.h"

namespace denormd::ops {

auto_backfill::auto_backfill(mongo::connection& conn, const mapping::planner& planner,
                             metrics::metrics& m, std::string meta_db)
    : conn_(conn), planner_(planner), metrics_(m), meta_db_(std::move(meta_db)) {}

auto_backfill::~auto_backfill() {
  stop();
}

void auto_backfill::start(std::vector<const mapping::mapping*> which) {
  if (which.empty()) return;
  for (const auto* m : which)
    metrics_.set_backfill_progress(m->name, 0);
  thread_ = std::jthread(
      [this, which = std::move(which)](std::stop_token stop) { run(which, std::move(stop)); });
}

void auto_backfill::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void auto_backfill::run(const std::vector<const mapping::mapping*>& which, std::stop_token stop) {
  std::string names;
  for (const auto* m : which)
    names += (names.empty() ? "" : ", ") + m->name;
  log::info("backfill", "new or changed mappings are backfilled while the streams run",
            {{"mappings", names}});
  backfill_options opts;
  opts.log_progress = true;
  opts.on_progress = [this](const backfill_progress& p) {
    double share = p.done ? 1.0 : 0.0;
    if (!p.done && p.total && *p.total > 0)
      share = std::min(1.0, static_cast<double>(p.documents) / static_cast<double>(*p.total));
    metrics_.set_backfill_progress(p.mapping, share);
  };
  backoff retry(std::chrono::seconds(1), std::chrono::seconds(30));
  std::vector<const mapping::mapping*> left = which;
  while (!stop.stop_requested() && !left.empty()) {
    backfiller backfill(conn_, planner_, metrics_, meta_db_);
    auto outcome = backfill.run(left, opts, stop);
    if (outcome) {
      // The finished ones are done for good; a stop leaves the rest to the next start.
      for (const auto& mb : outcome->mappings) {
        if (!mb.done) continue;
        std::erase_if(left, [&](const mapping::mapping* m) { return m->name == mb.mapping; });
      }
      if (outcome->complete) break;
      continue;
    }
    metrics_.count_error("backfill", outcome.error().metric_code());
    log::warn("backfill", "automatic backfill failed; it continues from its stored progress",
              {{"error", outcome.error().to_string()},
               {"retry_in_ms", static_cast<std::int64_t>(retry.next().count())}});
    if (!retry.wait(stop)) return;
  }
  if (left.empty())
    log::info("backfill", "new and changed mappings are backfilled", {{"mappings", names}});
}

}  // namespace denormd::ops
