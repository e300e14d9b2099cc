#include "ops/services/history_probe.h"

#include "common/clock.h"
#include "common/log.h"
#include "ops/commands/oplog_window.h"

namespace denormd::ops {

history_probe::history_probe(mongo::document_client& conn, metrics::metrics& m,
                             positions_fn positions, std::chrono::milliseconds interval)
    : conn_(conn), metrics_(m), positions_(std::move(positions)), interval_(interval) {}

history_probe::~history_probe() {
  stop();
}

void history_probe::start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    do {
      probe();
    } while (sleep_unless_stopped(stop, interval_));
  });
}

void history_probe::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void history_probe::clear() {
  for (const auto& source : shown_)
    metrics_.remove_history_headroom(source);
  shown_.clear();
}

void history_probe::probe() {
  auto oldest = oldest_oplog_entry(conn_);
  if (!oldest) {
    const auto& e = oldest.error();
    metrics_.count_error("headroom", e.metric_code());
    clear();
    // Once per kind of failure: a refused read fails the same way every round.
    if (failing_ != e.metric_code()) {
      log::warn("headroom", oplog_read_problem(e) +
                                "; denormd_history_headroom_seconds stays absent until "
                                "a read succeeds (streams are not affected)");
      failing_ = e.metric_code();
    }
    return;
  }
  if (failing_) {
    log::info("headroom", "the oldest entry of local.oplog.rs is readable again");
    failing_.reset();
  }
  if (!*oldest) {
    clear();  // no oplog entry to measure against
    return;
  }
  std::set<std::string, std::less<>> now_shown;
  for (const auto& p : positions_()) {
    metrics_.set_history_headroom(p.source, headroom_seconds(p.at, **oldest));
    now_shown.insert(p.source);
  }
  // Sources no longer running (stopped, or not yet stored a position) lose their series.
  for (const auto& source : shown_) {
    if (!now_shown.contains(source)) metrics_.remove_history_headroom(source);
  }
  shown_ = std::move(now_shown);
}

}  // namespace denormd::ops
