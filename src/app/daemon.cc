#include "app/daemon.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <thread>

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "app/cluster_positions.h"
#include "app/http_routes.h"
#include "app/mapping_watch.h"
#include "app/operator_status.h"
#include "app/partition_layout.h"
#include "app/reload_requests.h"
#include "app/reloader.h"
#include "app/replay.h"
#include "app/signals.h"
#include "app/status_api.h"
#include "checkpoint/checkpoint_store.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "http/endpoint.h"
#include "http/web_security.h"
#include "lease/coordinator.h"
#include "lease/lease_store.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "mongo/uri_redaction.h"
#include "ops/commands/backfiller.h"
#include "ops/commands/image_check.h"
#include "ops/services/background_verifier.h"
#include "ops/services/history_probe.h"
#include "pipeline/supervisor.h"
#include "sink/fenced_writer.h"
#include "sink/writer.h"
#include "source/watcher.h"
#include "version.h"

namespace denormd::app {

namespace {

// Every call into the driver gives up on an unreachable server within this, so that each
// thread re-checks its stop request at least as often and a stop needs no more than a few
// of them (the watcher's, the applier's batch, its last checkpoint). Retrying is the
// callers' job anyway; a URI that sets these options itself wins.
constexpr mongo::connect_options daemon_timeouts{2000, 2000};
// A stop that still waits on the driver after this (a server that accepts connections but
// never answers holds a call for socketTimeoutMS) exits anyway: whatever is unacknowledged
// was not checkpointed, so the next start replays it.
constexpr std::chrono::seconds stop_deadline{4};

void tune_malloc() {
#if defined(__GLIBC__)
  // glibc gives each thread that allocates its own arena (up to 8 per core) and keeps what
  // was freed in each; with a watcher and an applier per source that added a fifth to peak
  // RSS while catching up (58 -> 47 MB). Two arenas measured the same speed. Set before any
  // thread starts.
  mallopt(M_ARENA_MAX, 2);
#endif
}

// The MongoDB parts of every pipeline. Thread-safe: resync() runs on the watchers' threads.
class mongo_parts final : public pipeline::parts_factory {
 public:
  // `process`: this process run, as the write fences record their writers.
  mongo_parts(mongo::connection& conn, checkpoint::checkpoint_store& checkpoints,
              metrics::metrics& m, std::string meta_db, bool dry_run, std::string process)
      : conn_(conn),
        checkpoints_(checkpoints),
        metrics_(m),
        meta_db_(std::move(meta_db)),
        dry_run_(dry_run),
        process_(std::move(process)) {}

  std::unique_ptr<source::change_source> make_source(const mapping::ns& source,
                                                     const pipeline::start_position& from,
                                                     mapping::stream_images images,
                                                     const bson::array& filter,
                                                     source::event_queue& queue,
                                                     source::resync_hook resync) override {
    source::watcher_options wo;
    wo.source = source;
    wo.pre_images = images.before;
    wo.post_images = images.after;
    wo.pipeline = filter;
    wo.resume_after = from.resume_after;
    wo.start_at = from.start_at;
    wo.resync = std::move(resync);
    return std::make_unique<source::watcher>(conn_, std::move(wo), queue, metrics_);
  }

  std::unique_ptr<sink::batch_writer> make_writer(const mapping::ns& source) override {
    sink::writer_options wo{meta_db_, dry_run_};
    wo.turns = turns_;
    wo.observe_fanout = true;
    // A dry run writes nothing, so it takes no fence either.
    if (dry_run_) return std::make_unique<sink::writer>(conn_, metrics_, std::move(wo));
    return std::make_unique<sink::fenced_writer>(conn_, metrics_, std::move(wo),
                                                 sink::write_fence{meta_db_, source, process_});
  }

  std::shared_ptr<sink::computed_evaluator> make_evaluator(const mapping::ns&) override {
    return std::make_shared<sink::computed_evaluator>(conn_);
  }

  checkpoint::position_store& positions() override { return checkpoints_; }

  mongo::result<bson::timestamp> resync_start(const mapping::ns&) override {
    return conn_.operation_time();
  }

  // Backfills every mapping that reads `source` (as source, or as the target it fills).
  mongo::result<bool> resync_backfill(const mapping::planner& planner, const mapping::ns& source,
                                      std::stop_token stop) override {
    std::vector<const mapping::mapping*> which;
    for (const auto& mp : planner.mappings()) {
      // A partition backfills its whole namespace: the backfill converges whoever else writes.
      const mapping::ns coll = source.collection();
      if (mp.source == coll || (mp.fill_new_targets && mp.target == coll)) which.push_back(&mp);
    }
    ops::backfill_options opts;
    opts.restart = true;  // a partial earlier pass may have missed changes before its lastKey
    ops::backfiller backfill(conn_, planner, metrics_, meta_db_);
    auto outcome = backfill.run(which, opts, stop);
    if (!outcome) return outcome.error();
    return outcome->complete;
  }

 private:
  mongo::connection& conn_;
  checkpoint::checkpoint_store& checkpoints_;
  metrics::metrics& metrics_;
  const std::string meta_db_;
  const bool dry_run_;
  const std::string process_;
  // The writers' turns per target collection (one set for the process).
  const std::shared_ptr<sink::target_turns> turns_ = std::make_shared<sink::target_turns>();
};

// Without --ha, a pipeline fenced out by another writer (a second denormd without --ha, or the
// one that replaced this paused process) cannot go on: the process stops, exiting 1. With
// --ha the coordinator stops a pipeline whose lease moved: nothing to do here.
std::function<void(const mongo::driver_error&)> stop_when_fenced_out(const options& o,
                                                                     std::stop_source& stop,
                                                                     std::atomic<int>& exit_code) {
  if (o.ha) return nullptr;
  return [&stop, &exit_code](const mongo::driver_error& why) {
    if (exit_code.exchange(1) != 0) return;
    log::error("daemon",
               "another denormd has taken over writing a namespace this one wrote (only one may "
               "run without --ha); stopping",
               {{"error", why.to_string()}});
    stop.request_stop();
  };
}

// `fenced_out`: what a pipeline does when another writer took its namespace's write fence.
pipeline::pipeline_options pipeline_options_of(
    const options& o, std::function<void(const mongo::driver_error&)> fenced_out) {
  pipeline::pipeline_options po;
  po.applier.dry_run = o.dry_run;
  po.applier.linger = std::chrono::milliseconds(o.linger_ms);
  po.applier.checkpoint_interval = std::chrono::milliseconds(o.checkpoint_interval_ms);
  po.applier.fenced_out = std::move(fenced_out);
  return po;
}

// What /readyz reports: every watched namespace streaming, else which are not and why. With
// --ha, every namespace this instance holds: a standby that holds none is ready (healthy). What
// a start retries (refused credentials, say) comes first: no pipeline says it meanwhile.
readiness readiness_of(const reloader& running, const pipeline::supervisor& pipelines, bool ha,
                       const lease::coordinator* leases) {
  readiness r{true, ""};
  if (const std::string clash = leases != nullptr ? leases->layout_conflicts() : "";
      !clash.empty()) {
    r.ready = false;
    r.detail += clash + "\n";
  }
  if (const std::string waiting = running.waiting_for(); !waiting.empty()) {
    r.ready = false;
    r.detail += "waiting for MongoDB: " + waiting + "\n";
  }
  for (const auto& src : running.watched()) {
    const auto s = pipelines.status(src);
    if (s && s->ready) continue;
    if (!s && ha) continue;
    r.ready = false;
    r.detail += src.unit() + ": " + (s ? s->state : "starting") + "\n";
  }
  return r;
}

// The last resort of a stop: armed when the stop begins, it exits the process with the code
// given `stop_deadline` later, unless it is destroyed first. Declared before the connection,
// so that the driver's own teardown (which ends the sessions it pooled, waiting for an
// unreachable server as long as any call) is bounded by it too. Main thread only.
class exit_deadline {
 public:
  exit_deadline() = default;
  exit_deadline(const exit_deadline&) = delete;
  exit_deadline& operator=(const exit_deadline&) = delete;
  ~exit_deadline() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }

  void arm(int code) {
    thread_ = std::jthread([code, this](std::stop_token stop) {
      if (!sleep_unless_stopped(stop, stop_deadline)) return;
      if (stopped_) {
        log::info("daemon",
                  "the driver is still ending its sessions with a server that does not answer; "
                  "exiting without waiting for it");
      } else {
        log::warn("daemon",
                  "stop deadline passed with calls still waiting on the server; exiting without "
                  "them (nothing unacknowledged was checkpointed: the next start replays it)",
                  {{"deadline_s", static_cast<std::int64_t>(stop_deadline.count())}});
      }
      std::_Exit(code);
    });
  }
  // Everything of denormd's own has stopped; only the driver's teardown is left.
  void stopped() { stopped_ = true; }

 private:
  std::atomic<bool> stopped_{false};
  std::jthread thread_;
};

// With --ha, the lease unit of the automatic backfill (no namespace: it has no dot).
constexpr const char* backfill_unit = "auto-backfill";

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "denormd");
  return host;
}

// This instance's name among its peers: hostname:pid.
std::string default_instance_id() {
  return host_name() + ":" + std::to_string(getpid());
}

// This process run, as the write fences record their writers: hostname:pid:random, unique
// even when a pid or an --instance-id is used again.
std::string process_token() {
  std::random_device random;
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
  return host_name() + ":" + std::to_string(getpid()) + ":" + suffix;
}

// A namespace's lease unit back as the namespace: its name up to the first dot is the
// database (a database name has no dot).
mapping::ns namespace_of(const std::string& unit) {
  return mapping::parse_unit(unit).value_or(mapping::ns{});
}

// With --ha: the lease table and the coordinator of this instance's leases.
struct ha_parts {
  std::optional<lease::lease_store> table;
  std::unique_ptr<lease::coordinator> coordinator;
  // The coordinator once it runs, for the readiness probe's thread.
  std::atomic<const lease::coordinator*> running{nullptr};
};

// Fences `unit` for a new holder at `epoch`; the backfill unit has no checkpoint to fence.
mongo::result<std::int64_t> fence_unit(checkpoint::checkpoint_store& checkpoints,
                                       const std::string& process,
                                       std::chrono::milliseconds mark_time, const std::string& unit,
                                       std::int64_t epoch, bool taken_over) {
  // The backfill stores its progress per mapping and races the streams by design: there is
  // no checkpoint of its own to fence.
  if (unit == backfill_unit) return epoch;
  const mapping::ns source = namespace_of(unit);
  // A holder that did not release may have left a transaction open (killed or paused inside
  // it): ended now, so that the mark below and the new writes do not wait for the server
  // to abort it.
  if (taken_over) {
    auto ended = checkpoints.end_writer_of_other(source, process);
    if (!ended) {
      log::warn("lease",
                "could not end the session of the namespace's previous writer; the server "
                "aborts what it left open after its transaction lifetime",
                {{"unit", unit}, {"error", ended.error().to_string()}});
    } else if (*ended) {
      log::info("lease",
                "ended the session of the namespace's previous writer (it did not release "
                "its lease: gone, or paused)",
                {{"unit", unit}, {"writer", **ended}});
    }
  }
  return checkpoints.fence(source, epoch, mark_time);
}

// What this instance says of its namespaces with each heartbeat: any instance's status shows
// them from it (docs/architecture.md, "One view of the cluster").
lease::instance_report instance_report_now(const reloader& running,
                                           const pipeline::supervisor& pipelines,
                                           std::int64_t started_ms) {
  lease::instance_report r{denormd_version, started_ms, {}};
  for (const auto& src : running.watched()) {
    const auto s = pipelines.status(src);
    if (!s) continue;
    lease::unit_report u;
    u.unit = src.unit();
    u.streaming = s->ready;
    u.state = s->state;
    u.lag_seconds = s->lag_seconds;
    u.checkpoint_age_seconds = s->checkpoint_age_seconds;
    u.applied_events = static_cast<std::int64_t>(s->applied_events);
    u.applied_through = s->applied_through;
    u.events_per_second = s->events_per_second;
    u.last_event_ms = s->last_event_ms;
    u.errors = static_cast<std::int64_t>(s->errors);
    for (const auto& sample : pipelines.lag_history(src))
      u.lag.emplace_back(sample.at_ms, sample.lag_seconds);
    r.units.push_back(std::move(u));
  }
  return r;
}

// Starts taking part in the leases of the watched namespaces and of the automatic backfill.
// Taking or losing one posts a task that the main thread (reloader::serve) runs: it starts or
// stops the unit there. A reload changes the units.
void start_leases(ha_parts& ha, const options& o, const std::string& instance_id,
                  mongo::connection& conn, const std::string& meta_db,
                  const mapping::planner& planner, metrics::metrics& m, reloader& running,
                  reload_requests& tasks, checkpoint::checkpoint_store& checkpoints,
                  const std::string& process, const pipeline::supervisor& pipelines,
                  std::int64_t started_ms, std::stop_token stop) {
  // One unit per watched namespace, and one more: the automatic backfill runs on the one
  // instance that holds it.
  auto units_of = [](const std::vector<mapping::ns>& watched) {
    std::vector<std::string> units;
    for (const auto& src : watched)
      units.push_back(src.unit());
    units.push_back(backfill_unit);
    return units;
  };
  const std::vector<std::string> units = units_of(planner.watched_namespaces());
  m.declare_leases(units);
  ha.table.emplace(conn, meta_db, o.lease_ttl_ms);
  lease::unit_hooks hooks;
  hooks.start = [&running, &tasks, stop](const std::string& unit, const lease::lease_grant& grant) {
    if (unit == backfill_unit) {
      tasks.post_task([&running] { running.start_backfill_unit(); });
      return;
    }
    tasks.post_task([&running, src = namespace_of(unit), grant, stop] {
      running.start_unit(src, grant.epoch, grant.deadline, stop);
    });
  };
  hooks.stop = [&running, &tasks, &ha](const std::string& unit, bool release) {
    tasks.post_task([&running, &ha, unit, release] {
      if (unit == backfill_unit) {
        running.stop_backfill_unit();
      } else {
        running.stop_unit(namespace_of(unit));
      }
      if (release) ha.coordinator->released(unit);
    });
  };
  hooks.fence = [&checkpoints, &process, mark_time = ha.table->acquire_time()](
                    const std::string& unit, std::int64_t epoch,
                    bool taken_over) -> mongo::result<std::int64_t> {
    return fence_unit(checkpoints, process, mark_time, unit, epoch, taken_over);
  };
  hooks.report = [&running, &pipelines, started_ms] {
    return lease::to_document(instance_report_now(running, pipelines, started_ms));
  };
  ha.coordinator = std::make_unique<lease::coordinator>(
      *ha.table, m,
      lease::coordinator_options{instance_id, units, std::chrono::milliseconds(o.lease_ttl_ms)},
      std::move(hooks));
  // A reload changes the units, once the namespaces it stopped watching have stopped.
  running.on_watched_changed([&ha, units_of](const std::vector<mapping::ns>& watched) {
    ha.coordinator->set_units(units_of(watched));
  });
  ha.coordinator->start();
  ha.running = ha.coordinator.get();
}

// Before anything starts: an incremental mapping cannot apply a change without images.
// False (logged) when one lacks them.
bool images_ready(mongo::connection& conn, const mapping::planner& planner) {
  bool missing = false;
  for (const auto& problem : ops::check_images(conn, planner)) {
    if (problem.fatal) {
      log::error("daemon", problem.message);
      missing = true;
    } else {
      log::warn("daemon", problem.message);
    }
  }
  return !missing;
}

// With --ha: through which cluster time every change mapping `name` reads (every mapping with
// "") is applied in the whole cluster: each namespace it reads from this instance's pipeline
// when it streams it, else as its holder wrote it to the server. nullopt when no mapping of
// that name runs.
std::optional<bson::timestamp> applied_in_cluster(const reloader& running,
                                                  const pipeline::supervisor& pipelines,
                                                  cluster_positions& cluster,
                                                  std::string_view name) {
  const auto planner = running.planner();
  std::optional<bson::timestamp> lowest;
  for (const auto& src : running.watched()) {
    if (!name.empty()) {
      const auto reading = planner->mappings_reading(src);
      if (std::find(reading.begin(), reading.end(), name) == reading.end()) continue;
    }
    std::optional<bson::timestamp> at;
    if (const auto local = pipelines.status(src)) {
      at = local->applied_through;
    } else {
      at = cluster.through(src);
    }
    const bson::timestamp through = at.value_or(bson::timestamp{0, 0});
    if (!lowest || through < *lowest) lowest = through;
  }
  return lowest;
}

// The HTTP endpoint and its routes; null (logged) when it cannot listen.
std::unique_ptr<http::endpoint> start_endpoint(const options& o, metrics::metrics& m,
                                               const reloader& running,
                                               pipeline::supervisor& pipelines,
                                               reload_requests& reloads, status_api& status,
                                               cluster_positions* cluster, const ha_parts& ha,
                                               std::shared_ptr<http::web_security> security) {
  route_sources sources;
  sources.metrics = [&m] { return m.serialize(); };
  sources.ready = [&running, &pipelines, &ha, on = o.ha] {
    return readiness_of(running, pipelines, on, ha.running.load());
  };
  // As Prometheus guards its lifecycle endpoints: only when asked for.
  if (o.web_enable_lifecycle) {
    sources.reload = [&reloads](reload_requests::answer done) {
      log::info("reload", "reload asked for over HTTP");
      reloads.post(std::move(done));
    };
  }
  if (cluster == nullptr) {
    sources.applied = [&pipelines](std::string_view name) {
      return pipelines.applied_through(name);
    };
  } else {
    sources.applied = [&pipelines, &running, cluster](std::string_view name) {
      return applied_in_cluster(running, pipelines, *cluster, name);
    };
  }
  sources.status = [&status](std::shared_ptr<http::reply> to) { status.ask(std::move(to)); };
  const bool tls = security && security->tls();
  auto endpoint =
      http::endpoint::start(o.metrics_addr, daemon_routes(std::move(sources)), std::move(security));
  if (!endpoint) {
    log::error("daemon", "cannot serve metrics: " + endpoint.error().message,
               {{"address", o.metrics_addr}});
    return nullptr;
  }
  log::info(
      "daemon", "metrics listening",
      {{"address", o.metrics_addr}, {"port", static_cast<int>((*endpoint)->port())}, {"tls", tls}});
  return std::move(endpoint).value();
}

// What runs beside the pipelines: the history-headroom probe, which reads their stored
// positions, and the background verifier, which reads what they applied (a mapping is verified
// where its source streams: with --ha, by the holder of that namespace's lease). Started after
// the pipelines, stopped before them.
class side_services {
 public:
  side_services(const options& o, mongo::connection& conn, metrics::metrics& m,
                const std::string& meta_db, const reloader& running,
                pipeline::supervisor& pipelines)
      : opts_(o),
        headroom_(
            conn, m, [&pipelines] { return stored_positions(pipelines); },
            std::chrono::milliseconds(o.headroom_interval_ms)),
        verify_(
            conn, m, meta_db, [&running] { return running.planner(); },
            [&pipelines](const mapping::mapping& mp) -> std::optional<bson::timestamp> {
              if (!pipelines.status(mp.source)) return std::nullopt;
              return pipelines.applied_through(mp.name);
            },
            verify_options(o)) {}

  void start() {
    if (opts_.headroom_interval_ms > 0) headroom_.start();
    if (opts_.verify_interval_ms <= 0) return;
    verify_.start();
    log::info("daemon", "background verify on",
              {{"interval_s", static_cast<double>(opts_.verify_interval_ms) / 1000.0},
               {"repair", verify_options(opts_).repair}});
  }

  void stop() {
    verify_.stop();
    headroom_.stop();
  }

 private:
  static std::vector<ops::source_position> stored_positions(pipeline::supervisor& pipelines) {
    std::vector<ops::source_position> out;
    for (auto& [source, at] : pipelines.stored_positions())
      out.push_back(ops::source_position{std::move(source), at});
    return out;
  }

  static ops::background_verify_options verify_options(const options& o) {
    ops::background_verify_options vo;
    vo.interval = std::chrono::milliseconds(o.verify_interval_ms);
    vo.repair = !o.verify_no_repair && !o.dry_run;
    return vo;
  }

  const options& opts_;
  ops::history_probe headroom_;
  ops::background_verifier verify_;
};

// Stops everything in reverse order of start: the services beside the pipelines, the
// automatic backfill, the pipelines (stop reading, close the hand-overs, let writers finish and
// checkpoint), then releases the leases (after the last checkpoints, so a peer starts exactly
// where this instance stopped), then the endpoint. A stop still waiting on the server after the
// deadline exits without it (whatever is unacknowledged was not checkpointed: the next start
// replays it).
void shut_down(exit_deadline& deadline, side_services& services, reloader& running,
               pipeline::supervisor& pipelines, lease::coordinator* leases,
               http::endpoint& endpoint, int exit_code) {
  deadline.arm(exit_code);
  services.stop();
  running.stop();
  if (leases != nullptr) leases->drain();
  log::debug("daemon", "stopping the pipelines");
  const std::uint64_t applied = pipelines.stop_all();
  if (leases != nullptr) leases->release_all();
  endpoint.stop();
  deadline.stopped();
  log::info("daemon", "stopped", {{"events_applied", applied}});
}

// Every source's and mapping's series exist before the first event.
void declare_series(metrics::metrics& m, const mapping::planner& planner) {
  for (const auto& src : planner.watched_namespaces())
    m.declare_source(src.unit());
  for (const auto& mp : planner.mappings()) {
    m.declare_mapping(mp.name);
    m.set_mapping_info(mp.name, mp.fingerprint());
  }
}

// The mappings planned with the layout --partitions asks for; null (logged) when it names a
// namespace no mapping reads.
std::shared_ptr<const mapping::planner> planner_of(const options& o,
                                                   std::vector<mapping::mapping> mappings) {
  auto layout = partition_layout(o.partitions, mappings);
  if (!layout) {
    log::error("daemon", layout.error().message);
    return nullptr;
  }
  return std::make_shared<const mapping::planner>(std::move(mappings), *layout);
}

// With --ha, the name this instance takes in the lease table; "" without.
std::string instance_id_of(const options& o) {
  if (!o.ha) return "";
  return o.instance_id.empty() ? default_instance_id() : o.instance_id;
}

}  // namespace

daemon::daemon(options opts, std::vector<mapping::mapping> mappings,
               std::shared_ptr<http::web_security> security)
    : opts_(std::move(opts)), mappings_(std::move(mappings)), security_(std::move(security)) {}

daemon::~daemon() = default;

void daemon::request_stop() {
  stop_.request_stop();
}

int daemon::run() {
  tune_malloc();
  if (opts_.uri.empty()) {
    log::error("daemon", "no MongoDB URI: pass --uri or set DENORMD_URI");
    return 2;
  }
  auto replay = parse_replay(opts_);
  if (!replay) {
    log::error("daemon", replay.error().message);
    return 2;
  }
  const auto planner = planner_of(opts_, std::move(mappings_));
  if (!planner) return 2;
  metrics::metrics m(denormd_version);
  declare_series(m, *planner);
  // SIGHUP asks for a reload from here on; it is served once everything has started.
  reload_requests reloads;
  const stop_on_signal on_signal(stop_, "daemon", "signal received; stopping", [&reloads] {
    log::info("reload", "SIGHUP received");
    reloads.post({});
  });

  exit_deadline deadline;  // outlives the connection: its teardown is bounded too
  auto conn = mongo::connection::open(opts_.uri, "denormd", daemon_timeouts);
  if (!conn) {
    log::error("daemon", conn.error().to_string(), {{"uri", mongo::redact_uri(opts_.uri)}});
    return 2;
  }
  if (!images_ready(**conn, *planner)) return 2;
  const std::string meta_db = meta_database(opts_, (*conn)->default_database());
  checkpoint::checkpoint_store checkpoints(**conn, meta_db);
  const std::string instance_id = instance_id_of(opts_);
  const std::string process = process_token();
  const std::int64_t started_ms = wall_ms();
  mongo_parts parts(**conn, checkpoints, m, meta_db, opts_.dry_run, process);
  std::atomic<int> exit_code{0};
  pipeline::supervisor pipelines(
      parts, m, pipeline_options_of(opts_, stop_when_fenced_out(opts_, stop_, exit_code)));
  reloader running(opts_, **conn, m, pipelines, checkpoints, meta_db, planner);
  // The operator's page's data, read on a thread of its own; stopped after the endpoint.
  status_api status([page = std::make_shared<operator_status>(
                         status_context{**conn, meta_db, running, pipelines, opts_.mappings_dir,
                                        instance_id, opts_.web_enable_lifecycle, started_ms, &m})] {
    return expected<std::string>(page->read());
  });
  // With --ha, GET /applied answers for the namespaces other instances stream too.
  std::optional<cluster_positions> cluster;
  if (opts_.ha)
    cluster.emplace(**conn, meta_db, std::chrono::milliseconds(100),
                    [&running] { return running.watched(); });
  // With --ha: the lease table and the coordinator (started below, stopped before the endpoint).
  ha_parts ha;
  const auto endpoint = start_endpoint(opts_, m, running, pipelines, reloads, status,
                                       cluster ? &*cluster : nullptr, ha, security_);
  if (!endpoint) return 2;

  log::info("daemon", "starting",
            {{"uri", mongo::redact_uri(opts_.uri)},
             {"sources", static_cast<int>(planner->watched_namespaces().size())},
             {"checkpoints", meta_db + "." + checkpoint::collection_name},
             {"dry_run", opts_.dry_run}});
  // The pipelines, then the automatic backfill, then the services beside them; stopped in
  // reverse order.
  running.start(*replay, stop_.get_token());
  // With --ha the namespaces start as their leases are taken: the coordinator asks, the main
  // thread (serve, below) starts and stops them.
  if (opts_.ha)
    start_leases(ha, opts_, instance_id, **conn, meta_db, *planner, m, running, reloads,
                 checkpoints, process, pipelines, started_ms, stop_.get_token());
  side_services services(opts_, **conn, m, meta_db, running, pipelines);
  services.start();
  {
    std::optional<mapping_watch> watch;
    if (opts_.watch_mappings) watch.emplace(opts_.mappings_dir, [&reloads] { reloads.post({}); });
    running.serve(reloads, stop_.get_token());
  }
  shut_down(deadline, services, running, pipelines, ha.coordinator.get(), *endpoint,
            exit_code.load());
  return exit_code.load();
}

}  // namespace denormd::app
