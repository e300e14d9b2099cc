#include "app/daemon.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "app/replay.h"
#include "checkpoint/checkpoint_store.h"
#include "common/log.h"
#include "mapping/planner.h"
#include "metrics/http_server.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/backfiller.h"
#include "sink/applier.h"
#include "sink/writer.h"
#include "source/event_queue.h"
#include "source/watcher.h"
#include "version.h"

namespace denormd::app {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Queue bounds per source: enough to keep the writer busy, small enough that RSS stays
// bounded when the writer is blocked (DESIGN §3: back-pressure, bounded memory).
constexpr std::size_t queue_items = 4000;
constexpr std::size_t queue_bytes = 4 * 1024 * 1024;

struct pipeline {
  mapping::ns source;
  std::unique_ptr<source::event_queue> queue;
  std::unique_ptr<sink::writer> writer;
  std::unique_ptr<sink::applier> applier;
  std::unique_ptr<source::watcher> watcher;
};

mongo::driver_error stopping() {
  return mongo::driver_error{mongo::driver_error::origin::client, 0, "stopping", {}};
}

// History of `p.source` was lost: apply everything already read, take the cluster's time,
// backfill every mapping that reads this namespace (as source, or as the target it fills),
// and hand back that time: streaming resumes from it, so nothing between is skipped.
mongo::result<bson::timestamp> resync(mongo::connection& conn, const mapping::planner& planner,
                                      metrics::metrics& m, const std::string& meta_db,
                                      const pipeline& p, std::stop_token stop) {
  while (p.applier->completed_items() < p.watcher->pushed()) {
    if (stop.stop_requested()) return mongo::failure(stopping());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto from = conn.operation_time();
  if (!from) return from.error();
  std::vector<const mapping::mapping*> which;
  for (const auto& mp : planner.mappings()) {
    if (mp.source == p.source || (mp.fill_new_targets && mp.target == p.source))
      which.push_back(&mp);
  }
  ops::backfill_options opts;
  opts.restart = true;  // a partial earlier pass may have missed changes before its lastKey
  ops::backfiller backfill(conn, planner, m, meta_db);
  auto outcome = backfill.run(which, opts, stop);
  if (!outcome) return outcome.error();
  if (!outcome->complete) return mongo::failure(stopping());
  return *from;
}

}  // namespace

daemon::daemon(options opts, std::vector<mapping::mapping> mappings)
    : opts_(std::move(opts)), mappings_(std::move(mappings)) {}

daemon::~daemon() = default;

void daemon::request_stop() {
  std::lock_guard lock(mutex_);
  stop_ = true;
  stop_cv_.notify_all();
}

bool daemon::wait_or_stop(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return !stop_cv_.wait_for(lock, d, [&] { return stop_; });
}

int daemon::run() {
#if defined(__GLIBC__)
  // glibc gives each thread that allocates its own arena (up to 8 per core) and keeps what
  // was freed in each; with a watcher and an applier per source that added a fifth to peak
  // RSS while catching up (58 -> 47 MB). Two arenas measured the same speed. Set before any
  // thread starts.
  mallopt(M_ARENA_MAX, 2);
#endif
  if (opts_.uri.empty()) {
    log::error("daemon", "no MongoDB URI: pass --uri or set DENORMD_URI");
    return 2;
  }
  auto replay = parse_replay(opts_);
  if (!replay) {
    log::error("daemon", replay.error().message);
    return 2;
  }
  const mapping::planner planner(std::move(mappings_));
  metrics::metrics m(denormd_version);
  for (const auto& src : planner.watched_namespaces())
    m.declare_source(src.full());
  for (const auto& mp : planner.mappings())
    m.declare_mapping(mp.name);

  // Signals and the endpoint run on their own thread.
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("daemon", "signal received; stopping", {{"signal", sig}});
    request_stop();
  });

  auto conn = mongo::connection::open(opts_.uri, "denormd");
  if (!conn) {
    log::error("daemon", conn.error().to_string(), {{"uri", redact_uri(opts_.uri)}});
    return 2;
  }
  const std::string meta_db = meta_database(opts_, (*conn)->default_database());
  checkpoint::checkpoint_store checkpoints(**conn, meta_db);

  // fillNewTargets targets are watched too: their inserts are what fills new dependents.
  std::vector<pipeline> pipelines;
  for (const auto& src : planner.watched_namespaces())
    pipelines.push_back(pipeline{src, {}, {}, {}, {}});

  auto readiness = [&]() {
    metrics::readiness r{true, ""};
    for (const auto& p : pipelines) {
      if (p.watcher && p.watcher->ready()) continue;
      r.ready = false;
      r.detail += p.source.full() + ": " + (p.watcher ? p.watcher->state() : "starting") + "\n";
    }
    return r;
  };
  auto server = metrics::http_server::create(
      io, opts_.metrics_addr, [&] { return m.serialize(); }, readiness);
  if (!server) {
    log::error("daemon", "cannot serve metrics: " + server.error().message,
               {{"address", opts_.metrics_addr}});
    return 2;
  }
  (*server)->start();
  log::info("daemon", "metrics listening",
            {{"address", opts_.metrics_addr}, {"port", static_cast<int>((*server)->port())}});

  // Once a second: lag and checkpoint age.
  boost::asio::steady_timer timer(io);
  std::function<void()> tick = [&] {
    const std::int64_t now = now_ms();
    for (const auto& p : pipelines) {
      if (!p.applier) continue;
      m.set_lag(p.source.full(), p.applier->lag_seconds(now));
      m.set_checkpoint_age(p.source.full(), p.applier->checkpoint_age_seconds(now));
    }
    timer.expires_after(std::chrono::seconds(1));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  tick();
  std::thread io_thread([&] { io.run(); });

  log::info("daemon", "starting",
            {{"uri", redact_uri(opts_.uri)},
             {"sources", static_cast<int>(pipelines.size())},
             {"checkpoints", meta_db + "." + checkpoint::collection_name},
             {"dry_run", opts_.dry_run}});
  // Where each source starts: --resume-after/--start-at, else the stored checkpoint.
  bool stopping = false;
  for (auto& p : pipelines) {
    source::watcher_options wo;
    wo.source = p.source;
    std::int64_t saved_ms = 0;
    if (replay->resume_after || replay->start_at) {
      wo.resume_after = replay->resume_after;
      wo.start_at = replay->start_at;
    } else {
      std::chrono::milliseconds backoff{200};
      while (true) {
        auto cp = checkpoints.load(p.source);
        if (cp) {
          if (*cp) {
            wo.resume_after = (*cp)->token;
            saved_ms = (*cp)->saved_ms;
          }
          break;
        }
        m.count_error("checkpoint", cp.error().metric_code());
        log::warn("daemon", "cannot read the checkpoint; retrying",
                  {{"source", p.source.full()}, {"error", cp.error().to_string()}});
        if (!wait_or_stop(backoff)) {
          stopping = true;
          break;
        }
        backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
      }
    }
    if (stopping) break;
    wo.resync = [&, &pl = p](std::stop_token st) {
      return resync(**conn, planner, m, meta_db, pl, st);
    };
    p.queue = std::make_unique<source::event_queue>(queue_items, queue_bytes);
    p.writer =
        std::make_unique<sink::writer>(**conn, m, sink::writer_options{meta_db, opts_.dry_run});
    sink::applier_options ao;
    ao.source = p.source;
    ao.dry_run = opts_.dry_run;
    ao.initial_checkpoint_ms = saved_ms;
    ao.linger = std::chrono::milliseconds(opts_.linger_ms);
    ao.checkpoint_interval = std::chrono::milliseconds(opts_.checkpoint_interval_ms);
    p.applier = std::make_unique<sink::applier>(planner, *p.writer, checkpoints, *p.queue, m, ao);
    p.applier->start();
    p.watcher = std::make_unique<source::watcher>(**conn, wo, *p.queue, m);
    p.watcher->start();
  }

  {
    std::unique_lock lock(mutex_);
    stop_cv_.wait(lock, [&] { return stop_; });
  }

  // Reverse order: stop reading (a watcher ends within one await), close the hand-overs, let
  // writers finish and checkpoint. Joining the watchers first means every token they read is
  // queued, so an applier stopping on an empty queue stores the newest position.
  for (auto& p : pipelines) {
    if (p.watcher) p.watcher->request_stop();
  }
  for (auto& p : pipelines) {
    if (p.watcher) p.watcher->join();
  }
  for (auto& p : pipelines) {
    if (p.queue) p.queue->close();
    if (p.applier) p.applier->request_stop();
  }
  for (auto& p : pipelines) {
    if (p.applier) p.applier->join();
  }
  std::uint64_t applied = 0;
  for (const auto& p : pipelines)
    applied += p.applier ? p.applier->applied_events() : 0;
  (*server)->stop();
  io.stop();
  io_thread.join();
  pipelines.clear();
  log::info("daemon", "stopped", {{"events_applied", applied}});
  return 0;
}

}  // namespace denormd::app
