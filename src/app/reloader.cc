#include "app/reloader.h"

#include <algorithm>

#include "app/partition_layout.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/retry.h"
#include "config/mapping_loader.h"
#include "ops/commands/image_check.h"
#include "ops/services/streamed_sets.h"

namespace denormd::app {

namespace {

// Where until_answered reports a failure: counted under the checkpoint stage, logged (naming
// the user when the server refused the credentials), and noted as what the reloader waits for
// (reloader::waiting_for).
struct retry_report {
  metrics::metrics& m;
  const mongo::connection& conn;
  const std::function<void(std::string)>& note;
};

// Calls `attempt` (returning a mongo::result or status) until it succeeds; each failure is
// reported (as `what`, with one context field) and followed by a back-off. nullopt when stopped
// first.
template <class F>
auto until_answered(std::stop_token stop, const retry_report& r, std::string_view component,
                    std::string_view what, std::string_view key, const std::string& value,
                    F attempt) -> std::optional<decltype(attempt())> {
  backoff retry(std::chrono::milliseconds(200), std::chrono::milliseconds(10000));
  auto out = retry_with_backoff(stop, retry, attempt, [&](const auto& e, const retry_state&) {
    r.m.count_error("checkpoint", e.metric_code());
    const std::string why = r.conn.describe(e);
    // Refused credentials or a missing privilege are the operator's to fix.
    const bool refused = e.refused();
    log::write(refused ? log::level::error : log::level::warn, component,
               std::string(what) + "; retrying", {{key, value}, {"error", why}});
    r.note(std::string(what) + ": " + why);
    return retry_verdict::retry;
  });
  r.note("");
  return out;
}

// The stored checkpoint of `source` (none: never stored), read again after a back-off until the
// server answers. nullopt when stopped first.
std::optional<std::optional<checkpoint::checkpoint>> read_checkpoint(
    const mapping::ns& source, checkpoint::checkpoint_store& checkpoints, const retry_report& r,
    std::stop_token stop) {
  auto cp = until_answered(stop, r, "daemon", "cannot read the checkpoint", "source", source.unit(),
                           [&] { return checkpoints.load(source); });
  if (!cp) return std::nullopt;
  return std::move(**cp);
}

// Where a stream resumes from its stored checkpoint; with none, from now.
pipeline::start_position position_of(const std::optional<checkpoint::checkpoint>& cp) {
  if (!cp) return pipeline::start_position{};
  const auto& c = *cp;
  // A checkpoint stored by a denormd without stream filters has neither its event's time nor a
  // filter: the token's own encoding tells the time.
  const auto time = c.event_time || !c.filter.empty() ? c.event_time : mapping::token_time(c.token);
  return pipeline::start_position{c.token, std::nullopt, c.saved_ms,  std::nullopt, time, c.filter,
                                  0,       nullptr,      std::nullopt};
}

// The mappings that stopped reading the namespace, as its checkpoint keeps them.
std::vector<checkpoint::stopped_mapping> stopped_of(
    const std::optional<checkpoint::checkpoint>& cp) {
  return cp && cp->stopped ? *cp->stopped : std::vector<checkpoint::stopped_mapping>{};
}

// Where every stream starts with --resume-after/--start-at.
pipeline::start_position position_of(const replay_point& replay) {
  // A token given by hand may come from a stream whose filter dropped nothing, or from
  // another namespace's: as for a changed filter, each stream starts at its cluster time
  // behind a gate, so it resumes exactly after the token whatever the filter drops.
  return pipeline::start_position{
      replay.resume_after,
      replay.start_at,
      0,
      std::nullopt,
      replay.resume_after ? mapping::token_time(*replay.resume_after) : std::nullopt,
      "",
      0,
      nullptr,
      std::nullopt};
}

// Starts the pipeline of `source` planning with `p` from `from`; with --ha, then records that
// it does (ops/services/streamed_sets.h): the automatic backfill of a new or changed mapping,
// perhaps on another instance, waits for it.
void start_streaming(pipeline::supervisor& pipelines, mongo::connection& conn,
                     const retry_report& r, const std::string& meta_db, bool ha,
                     const mapping::ns& source, std::shared_ptr<const mapping::planner> p,
                     pipeline::start_position from, std::stop_token stop) {
  pipelines.start(source, p, std::move(from));
  if (!ha) return;  // without --ha this process's backfill starts after its pipelines
  until_answered(stop, r, "reload", "cannot record the mappings the stream runs", "source",
                 source.unit(), [&] { return ops::record_streamed(conn, meta_db, source, *p); });
}

bool contains(const std::vector<mapping::ns>& in, const mapping::ns& n) {
  return std::find(in.begin(), in.end(), n) != in.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "-" : out;
}

// The part of `p` a reload decides, and `p` with that part replaced by `r`.
mapping::resume_position resume_of(const pipeline::start_position& p) {
  return {p.resume_after, p.start_at, p.token_time, p.filter, p.gate};
}

pipeline::start_position with_resume(pipeline::start_position p, mapping::resume_position r) {
  p.resume_after = std::move(r.resume_after);
  p.start_at = r.start_at;
  p.token_time = r.token_time;
  p.filter = std::move(r.filter);
  p.gate = std::move(r.gate);
  return p;
}

void log_replay(const mapping::replay& r, const mapping::ns& source) {
  log::info("reload", "mappings put back replay the changes they missed",
            {{"mappings", joined(r.mappings)},
             {"source", source.unit()},
             {"from", mapping::token_position(*r.from.resume_after)}});
}

}  // namespace

reloader::reloader(const options& opts, mongo::connection& conn, metrics::metrics& m,
                   pipeline::supervisor& pipelines, checkpoint::checkpoint_store& checkpoints,
                   std::string meta_db, std::shared_ptr<const mapping::planner> planner)
    : opts_(opts),
      conn_(conn),
      metrics_(m),
      pipelines_(pipelines),
      checkpoints_(checkpoints),
      meta_db_(std::move(meta_db)),
      planner_(std::move(planner)),
      policy_(opts.ha),
      watched_(planner_->watched_namespaces()),
      note_waiting_([this](std::string what) {
        std::lock_guard lock(waiting_mutex_);
        waiting_ = std::move(what);
      }) {}

reloader::~reloader() {
  stop();
}

void reloader::start(const replay_point& replay, std::stop_token stop) {
  const bool replaying = replay.resume_after || replay.start_at;
  // A replay asked for on the command line replays every mapping from there already.
  if (!replaying && !note_removed_at_start(stop)) return;
  // With --ha a namespace starts when its lease is taken (start_unit).
  for (const auto& src : opts_.ha ? std::vector<mapping::ns>{} : watched_) {
    if (stop.stop_requested()) return;  // stopped while starting
    auto from = replaying ? position_of(replay) : from_checkpoint(src, *planner_, 0, nullptr, stop);
    if (!from) return;
    start_streaming(pipelines_, conn_, {metrics_, conn_, note_waiting_}, meta_db_, opts_.ha, src,
                    planner_, std::move(*from), stop);
  }
  policy_.running(*planner_);  // back (replayed above) or back changed (backfilled)
  // With --ha it runs on the instance holding its lease (start_backfill_unit).
  if (!stop.stop_requested() && !opts_.ha) start_backfill();
}

void reloader::start_backfill_unit() {
  if (!backfill_) start_backfill();
}

void reloader::stop_backfill_unit() {
  if (!backfill_) return;
  backfill_->stop();  // between two batches: its progress is stored for the next holder
  backfill_.reset();
}

bool reloader::note_removed_at_start(std::stop_token stop) {
  auto read = until_answered(stop, {metrics_, conn_, note_waiting_}, "daemon",
                             "cannot read the recorded mappings", "collection",
                             meta_db_ + "." + ops::mappings_collection,
                             [&] { return ops::read_recorded(conn_, meta_db_); });
  if (!read) return false;
  const std::vector<ops::recorded_mapping> recorded = std::move(*read).value();
  // A mapping gone since the last run stopped at its namespaces' checkpoints.
  std::map<mapping::ns, mapping::resume_position> positions;
  for (const auto& src : mapping::reload_policy::positions_needed(recorded, *planner_)) {
    auto cp = read_checkpoint(src, checkpoints_, {metrics_, conn_, note_waiting_}, stop);
    if (!cp) return false;
    positions.emplace(src, resume_of(position_of(*cp)));
  }
  if (!opts_.dry_run && !note_stopped(recorded, positions, stop)) return false;
  policy_.start(recorded, *planner_);
  return true;
}

bool reloader::note_stopped(const std::vector<ops::recorded_mapping>& recorded,
                            const std::map<mapping::ns, mapping::resume_position>& positions,
                            std::stop_token stop) {
  for (const auto& [src, entries] :
       mapping::reload_policy::entries_at_start(recorded, *planner_, positions)) {
    for (const auto& e : entries) {
      if (!until_answered(stop, {metrics_, conn_, note_waiting_}, "daemon",
                          "cannot note where a removed mapping stopped", "source", src.unit(),
                          [&] { return checkpoints_.note_stopped(src, e); }))
        return false;
    }
  }
  // Kept with the checkpoints now, they are read once (a denormd before this recorded them).
  for (const auto& r : recorded) {
    if (r.stopped_at.empty()) continue;
    if (!until_answered(stop, {metrics_, conn_, note_waiting_}, "daemon",
                        "cannot clear a moved stoppedAt", "mapping", r.name,
                        [&] { return ops::forget_stopped_at(conn_, meta_db_, r.name); }))
      return false;
  }
  return true;
}

void reloader::serve(reload_requests& requests, std::stop_token stop) {
  std::vector<reload_requests::answer> waiting;
  std::vector<std::function<void()>> tasks;
  bool reload_asked = false;
  while (requests.take(stop, reload_asked, waiting, tasks)) {
    for (auto& task : tasks)
      task();
    if (!reload_asked) continue;
    const reload_outcome outcome = reload(stop);
    {
      std::lock_guard lock(watched_mutex_);
      last_reload_ = reload_result{wall_ms(), outcome.ok, outcome.message};
    }
    answer_all(waiting, outcome);
  }
  requests.close();
}

void reloader::start_unit(const mapping::ns& source, std::int64_t lease_epoch,
                          std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline,
                          std::stop_token stop) {
  if (pipelines_.status(source)) {
    log::warn("lease", "the namespace already streams; not started again",
              {{"source", source.unit()}});
    return;
  }
  if (!contains(watched(), source)) return;  // a reload stopped watching it meanwhile
  auto from = from_checkpoint(source, *planner_, lease_epoch, std::move(lease_deadline), stop);
  if (!from) return;
  start_streaming(pipelines_, conn_, {metrics_, conn_, note_waiting_}, meta_db_, opts_.ha, source,
                  planner_, std::move(*from), stop);
}

void reloader::stop_unit(const mapping::ns& source) {
  pipelines_.stop(source);
  // Its lag, age and readiness are another instance's to report now.
  metrics_.remove_source(source.unit());
}

void reloader::stop() {
  if (backfill_) backfill_->stop();
}

std::string reloader::waiting_for() const {
  std::lock_guard lock(waiting_mutex_);
  return waiting_;
}

std::vector<mapping::ns> reloader::watched() const {
  std::lock_guard lock(watched_mutex_);
  return watched_;
}

std::optional<reloader::reload_result> reloader::last_reload() const {
  std::lock_guard lock(watched_mutex_);
  return last_reload_;
}

std::shared_ptr<const mapping::planner> reloader::planner() const {
  std::lock_guard lock(watched_mutex_);
  return planner_;
}

void reloader::on_watched_changed(std::function<void(const std::vector<mapping::ns>&)> f) {
  on_watched_ = std::move(f);
}

void reloader::start_backfill() {
  backfill_ = std::make_unique<ops::auto_backfill>(conn_, planner_, metrics_, meta_db_, opts_.ha);
  backfill_->start(wall_ms(), !opts_.no_auto_backfill && !opts_.dry_run);
}

reload_outcome reloader::reload(std::stop_token stop) {
  log::info("reload", "reloading the mappings", {{"path", opts_.mappings_dir}});
  auto failed = [&](const std::string& what, const std::string& detail) {
    metrics_.count_reload("error");
    log::error("reload", what + "; the running mappings run on unchanged",
               {{"path", opts_.mappings_dir}});
    return reload_outcome{false, detail};
  };
  auto loaded = config::load_mappings(opts_.mappings_dir, opts_.db);
  if (!loaded) {
    std::string detail;
    for (const auto& e : loaded.error()) {
      log::error("reload", e.to_string());
      detail += e.to_string() + "\n";
    }
    return failed(std::to_string(loaded.error().size()) + " error(s) in the mapping files", detail);
  }
  auto layout = partition_layout(opts_.partitions, *loaded, true);
  if (!layout) return failed(layout.error().message, layout.error().message);
  auto next = std::make_shared<const mapping::planner>(std::move(loaded).value(), *layout);
  std::string fatal;
  for (const auto& problem : ops::check_images(conn_, *next)) {
    if (problem.fatal) {
      log::error("reload", problem.message);
      fatal += problem.message + "\n";
    } else {
      log::warn("reload", problem.message);
    }
  }
  if (!fatal.empty()) return failed("a source lacks the document images a mapping needs", fatal);
  move_to(std::move(next), stop);
  metrics_.count_reload("ok");
  return {true, ""};
}

void reloader::move_to(std::shared_ptr<const mapping::planner> next, std::stop_token stop) {
  const auto [added, changed, removed] = mapping::compare(*planner_, *next);
  if (added.empty() && changed.empty() && removed.empty()) {
    log::info("reload", "the mappings are unchanged; nothing to do");
    return;
  }
  if (backfill_) backfill_->stop();  // it walks with the running set; it starts again below
  policy_.begin(*planner_, *next);
  const std::vector<mapping::ns> was_watched = watched();
  const std::vector<mapping::ns> now_watched = next->watched_namespaces();
  // With --ha only the namespaces this instance holds have a pipeline to move.
  const move_counts moved =
      carry_out(mapping::namespace_moves(was_watched, *planner_, *next, opts_.ha), next, stop);
  for (const auto& name : removed)
    metrics_.remove_mapping(name);
  for (const auto& m : next->mappings()) {
    if (std::find(added.begin(), added.end(), m.name) != added.end())
      metrics_.declare_mapping(m.name);
    metrics_.set_mapping_info(m.name, m.fingerprint());
  }
  policy_.running(*next);
  {
    std::lock_guard lock(watched_mutex_);
    planner_ = std::move(next);
    watched_ = now_watched;
  }
  if (on_watched_ && now_watched != was_watched) on_watched_(now_watched);
  log::info("reload", "the new mappings run",
            {{"added", joined(added)},
             {"changed", joined(changed)},
             {"removed", joined(removed)},
             {"pipelines_kept", moved.kept},
             {"pipelines_handed_over", moved.handed_over},
             {"pipelines_started", moved.started},
             {"pipelines_stopped", moved.stopped}});
  // With --ha the automatic backfill runs where its lease is held.
  if (!stop.stop_requested() && (!opts_.ha || backfill_)) start_backfill();
}

reloader::move_counts reloader::carry_out(const std::vector<mapping::namespace_move>& moves,
                                          const std::shared_ptr<const mapping::planner>& next,
                                          std::stop_token stop) {
  using kind = mapping::namespace_move::kind;
  move_counts count;
  for (const auto& [src, what] : moves) {
    // The stops come first and always run: the others wait for a stop request.
    if (what != kind::stop && stop.stop_requested()) break;
    if (what == kind::stop) {
      if (auto at = pipelines_.hand_over(src)) {
        restart_position(std::move(*at), src, *next, stop);  // notes where its mappings stopped
        ++count.stopped;
      }
      metrics_.remove_source(src.unit());
    } else if (what == kind::keep) {
      ++count.kept;
    } else if (what == kind::hand_over) {
      auto at = pipelines_.hand_over(src);
      if (!at) continue;  // not held (--ha), or the daemon was stopped while starting
      start_streaming(pipelines_, conn_, {metrics_, conn_, note_waiting_}, meta_db_, opts_.ha, src,
                      next, restart_position(std::move(*at), src, *next, stop), stop);
      ++count.handed_over;
    } else {
      metrics_.declare_source(src.unit());
      auto from = from_checkpoint(src, *next, 0, nullptr, stop);
      if (!from) break;
      start_streaming(pipelines_, conn_, {metrics_, conn_, note_waiting_}, meta_db_, opts_.ha, src,
                      next, std::move(*from), stop);
      ++count.started;
    }
  }
  return count;
}

std::optional<pipeline::start_position> reloader::from_checkpoint(
    const mapping::ns& source, const mapping::planner& next, std::int64_t lease_epoch,
    std::shared_ptr<const std::atomic<std::int64_t>> lease_deadline, std::stop_token stop) {
  // Read once: where it resumes, and the mappings that stopped reading it.
  auto cp = read_checkpoint(source, checkpoints_, {metrics_, conn_, note_waiting_}, stop);
  if (!cp) return std::nullopt;
  pipeline::start_position from = position_of(*cp);
  if (!take_over(source, *cp, from, stop)) return std::nullopt;
  from.lease_epoch = lease_epoch;
  from.lease_deadline = std::move(lease_deadline);
  return settle_stopped(std::move(from), source, next, stopped_of(*cp), stop);
}

bool reloader::take_over(const mapping::ns& source,
                         const std::optional<checkpoint::checkpoint>& own,
                         pipeline::start_position& from, std::stop_token stop) {
  auto units = until_answered(stop, {metrics_, conn_, note_waiting_}, "daemon",
                              "cannot read the checkpoints", "source", source.unit(),
                              [&] { return checkpoints_.load_units(source); });
  if (!units) return false;
  std::vector<mapping::unit_position> stored;
  for (const auto& [unit, cp] : **units)
    stored.push_back({unit.part, mapping::token_position(cp.token)});
  auto h = mapping::handover_for(source.part, stored);
  if (!h) return true;
  // Start at the later of its own position and the least of the old layout's: every key's
  // events up to there are applied, by this partition or by the key's old owner.
  const checkpoint::checkpoint* least = nullptr;
  for (const auto& [unit, cp] : **units) {
    const int count = unit.part.whole() ? 1 : unit.part.count;
    if (count != h->count || unit.part == source.part) continue;
    if (least == nullptr ||
        mapping::token_position(cp.token) < mapping::token_position(least->token))
      least = &cp;
  }
  if (least != nullptr &&
      (!own || mapping::token_position(own->token) < mapping::token_position(least->token))) {
    from = position_of(std::optional<checkpoint::checkpoint>(*least));
  }
  log::info("daemon", "taking over from another layout of the namespace's partitions",
            {{"source", source.unit()},
             {"from_partitions", std::to_string(h->count)},
             {"start", from.resume_after ? mapping::token_position(*from.resume_after) : "now"}});
  from.handover = std::move(h);
  return true;
}

pipeline::start_position reloader::restart_position(pipeline::start_position at,
                                                    const mapping::ns& source,
                                                    const mapping::planner& next,
                                                    std::stop_token stop) {
  // `at` is where the old pipeline stopped, which its checkpoint may not have reached yet; the
  // entries are the checkpoint's.
  auto cp = read_checkpoint(source, checkpoints_, {metrics_, conn_, note_waiting_}, stop);
  if (!cp) return at;
  return settle_stopped(std::move(at), source, next, stopped_of(*cp), stop);
}

pipeline::start_position reloader::settle_stopped(
    pipeline::start_position base, const mapping::ns& source, const mapping::planner& next,
    const std::vector<checkpoint::stopped_mapping>& stored, std::stop_token stop) {
  mapping::settled settled = policy_.settle(resume_of(base), source, next, stored);
  // Without a token the old pipeline applied nothing and stored nothing: there is no position
  // to replay from.
  for (const auto& name : settled.unknown)
    log::warn("reload", "a removed mapping's position is unknown; put back, it is not replayed",
              {{"mapping", name}, {"source", source.unit()}});
  if (settled.replayed) log_replay(*settled.replayed, source);
  pipeline::start_position out = with_resume(std::move(base), std::move(settled.from));
  if (!settled.store || opts_.dry_run) return out;
  // The token and the entries in one write, before the pipeline starts: a crash meanwhile
  // replays from here, and no mapping stops here without its entry.
  checkpoint::checkpoint cp{
      *out.resume_after,         0, wall_ms(), out.token_time, out.filter, out.lease_epoch,
      std::move(settled.entries)};
  until_answered(stop, {metrics_, conn_, note_waiting_}, "reload",
                 "cannot store the stopped mappings", "source", source.unit(),
                 [&]() -> mongo::status {
                   auto st = checkpoints_.save(source, cp);
                   // Another instance took the namespace over: its own start settles them.
                   if (!st && st.error().code == mongo::lease_fenced_code) return {};
                   return st;
                 });
  return out;
}

}  // namespace denormd::app
