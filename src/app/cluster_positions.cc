#include "app/cluster_positions.h"

#include "checkpoint/checkpoint_store.h"
#include "common/log.h"
#include "lease/lease_store.h"
#include "ops/commands/status_probe.h"

namespace denormd::app {

namespace {

// Readings go on this long after the last question: a client polling /applied keeps them
// going, and nobody asking costs the server nothing.
constexpr auto interest = std::chrono::seconds(5);

}  // namespace

cluster_positions::cluster_positions(mongo::connection& conn, std::string meta_db,
                                     std::chrono::milliseconds every,
                                     std::function<std::vector<mapping::ns>()> namespaces)
    : conn_(conn), meta_db_(std::move(meta_db)), every_(every), namespaces_(std::move(namespaces)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

cluster_positions::~cluster_positions() {
  thread_.request_stop();
  wake_.notify_all();
}

std::optional<bson::timestamp> cluster_positions::through(const mapping::ns& ns) {
  std::lock_guard lock(mutex_);
  const bool idle = std::chrono::steady_clock::now() - asked_ > interest;
  asked_ = std::chrono::steady_clock::now();
  if (idle) wake_.notify_all();
  const auto it = through_.find(ns.unit());
  if (it == through_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, bson::timestamp> cluster_positions::read(
    const std::vector<mapping::ns>& namespaces) {
  std::map<std::string, bson::timestamp> out;
  checkpoint::checkpoint_store store(conn_, meta_db_);
  for (const auto& ns : namespaces) {
    auto cp = store.load(ns);
    if (!cp || !*cp) continue;
    const auto at = (*cp)->event_time ? (*cp)->event_time : ops::token_cluster_time((*cp)->token);
    if (at) out[ns.unit()] = *at;
  }
  lease::lease_store leases(conn_, meta_db_, 0);
  if (auto rows = leases.instances()) {
    for (const auto& row : *rows) {
      if (!row.live || !row.report) continue;
      for (const auto& u : row.report->units) {
        if (!u.applied_through) continue;
        auto& at = out[u.unit];
        if (*u.applied_through > at) at = *u.applied_through;
      }
    }
  }
  return out;
}

void cluster_positions::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex_);
      // Asleep while nobody asks.
      wake_.wait(lock, stop, [&] { return std::chrono::steady_clock::now() - asked_ <= interest; });
      if (stop.stop_requested()) return;
    }
    auto read_now = read(namespaces_());
    {
      std::lock_guard lock(mutex_);
      // A time once read stays: both sources only move forward.
      for (auto& [ns, at] : read_now) {
        auto& known = through_[ns];
        if (at > known) known = at;
      }
    }
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, every_, [] { return false; });
  }
}

}  // namespace denormd::app
