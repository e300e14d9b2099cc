#include "ops/commands/backfiller.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "bson/identical.h"
#include "bson/json.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/overloaded.h"
#include "common/retry.h"
#include "mapping/change_event.h"
#include "mapping/reference.h"
#include "ops/commands/computed_reads.h"
#include "ops/commands/drift.h"
#include "ops/commands/orphan_sweep.h"
#include "sink/writer.h"

namespace denormd::ops {

namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

// How a mapping's backfill walks, by kind: copy walks the sources, writes what a fresh insert
// of each would, and reads the batch again afterwards; recent walks the parents and refills
// them, a share of each batch per thread.
struct walk_plan {
  mapping::ns walked;
  bson::document projection;
  bool recheck_sources = false;
  bool parallel_refills = false;
};

walk_plan plan_walk(const mapping::mapping& m, const mapping::planner& planner) {
  return m.visit(overloaded{[&](const mapping::copy_kind&) {
                              walk_plan w{m.source, {}, true, false};
                              if (planner.reads_whole_document(m.source)) return w;
                              for (const auto& f : planner.document_fields(m.source))
                                w.projection.append(f, 1);
                              return w;
                            },
                            [&](const auto& k) {
                              // recent and aggregate: the parents, a share per thread.
                              walk_plan w{m.target, bson::document{{"_id", 1}}, false, true};
                              if (k.parent_field != "_id") w.projection.append(k.parent_field, 1);
                              return w;
                            }});
}

// The progress line (or the caller's callback) of one mapping's run, at most once per
// log_interval and always at the end.
class progress_reporter {
 public:
  progress_reporter(std::string mapping, clock::time_point began, const backfill_options& opts,
                    std::optional<std::uint64_t> total)
      : began_(began), opts_(opts), last_log_(clock::now()) {
    progress_.mapping = std::move(mapping);
    progress_.total = total;
  }

  void report(const mapping_backfill& out, bool done) {
    progress_.documents = out.documents;
    progress_.run_documents = out.run_documents;
    progress_.elapsed_seconds = seconds_since(began_);
    progress_.done = done;
    if (opts_.on_progress) opts_.on_progress(progress_);
    if (opts_.on_progress && !opts_.log_progress) return;
    if (done || clock::now() - last_log_ >= opts_.log_interval) {
      last_log_ = clock::now();
      log::info("backfill", progress_line(progress_),
                {{"mapping", progress_.mapping},
                 {"documents", out.documents},
                 {"rate", rate_per_second(progress_)}});
    }
  }

 private:
  backfill_progress progress_;
  clock::time_point began_;
  const backfill_options& opts_;
  clock::time_point last_log_;
};

void announce(const mapping::mapping& m, const mapping::ns& walked,
              const std::optional<bson::value>& after, mapping_backfill& out) {
  if (!after) {
    log::info("backfill", "starting", {{"mapping", m.name}, {"collection", walked.full()}});
    return;
  }
  out.resumed_after = *after;
  log::info("backfill", "continuing an unfinished backfill",
            {{"mapping", m.name},
             {"collection", walked.full()},
             {"after", bson::to_json(*after)},
             {"documents_done", out.documents}});
}

}  // namespace

bson::document parents_filter(bson::array ids) {
  // The walk is in _id order: a range selects the same parents (plus any inserted into it
  // since, which a refill leaves right) and is cheaper than a long $in. Ranges work within
  // one type bracket only.
  if (ids.size() > 1 && bson::canonical_rank(ids.front()) == bson::canonical_rank(ids.back())) {
    return bson::document{{"_id", bson::document{{"$gte", ids.front()}, {"$lte", ids.back()}}}};
  }
  return bson::document{{"_id", bson::document{{"$in", std::move(ids)}}}};
}

backfiller::backfiller(mongo::connection& conn, const mapping::planner& planner,
                       metrics::metrics& m, std::string meta_db)
    : conn_(conn), planner_(planner), metrics_(m), meta_db_(std::move(meta_db)) {}

mongo::result<backfill_outcome> backfiller::run(const std::vector<const mapping::mapping*>& which,
                                                const backfill_options& opts,
                                                std::stop_token stop) {
  backfill_outcome out;
  for (const mapping::mapping* m : which) {
    if (stop.stop_requested()) return out;
    mapping_backfill mb{m->name, 0, 0, std::nullopt, false};
    const auto began = clock::now();
    backoff retry;
    // A transient failure anywhere starts the mapping again from its stored progress.
    bool first = true;
    std::uint64_t before = 0;
    auto attempt = [&] {
      before = mb.run_documents + mb.run_targets;
      return backfill_one(*m, opts, std::exchange(first, false), began, stop, mb);
    };
    auto failed = [&](const mongo::driver_error& e, const retry_state&) {
      if (!e.transient()) return retry_verdict::give_up;
      if (mb.run_documents + mb.run_targets > before) retry.reset();
      if (opts.give_up_after.count() > 0 && retry.failing_for() >= opts.give_up_after) {
        return retry_verdict::give_up;
      }
      log::warn("backfill", "transient failure; continuing after the last stored batch",
                {{"mapping", m->name}, {"error", e.to_string()}});
      return retry_verdict::retry;
    };
    auto st = retry_with_backoff(stop, retry, attempt, failed);
    if (st && !*st) return st->error();
    out.mappings.push_back(std::move(mb));
    if (!out.mappings.back().done) return out;
  }
  out.complete = true;
  return out;
}

mongo::result<std::vector<mapping::write_op>> backfiller::plan_batch(
    const mapping::mapping& m, std::vector<bson::document>& batch,
    const backfill_options& opts) const {
  return m.visit(overloaded{
      [&](const mapping::copy_kind&) { return plan_copies(m, batch); },
      [&](const mapping::recent_kind& k) -> mongo::result<std::vector<mapping::write_op>> {
        return plan_parent_shares(batch, opts, [&](bson::document parents) {
          auto op = k.refill(m, std::move(parents), mapping::merge_rule::mapping_barrier);
          // The source's own stream may push to these parents meanwhile (a
          // re-sync, or a backfill beside the daemon): the refill reads the
          // children again until what it wrote holds.
          op.as<mapping::refill_write>()->recheck = true;
          return op;
        });
      },
      [&](const mapping::aggregate_kind& k) -> mongo::result<std::vector<mapping::write_op>> {
        return plan_parent_shares(batch, opts, [&](bson::document parents) {
          // Rechecked for the same reason as a refill.
          return k.recompute_selected(m, std::move(parents), true);
        });
      }});
}

std::vector<mapping::write_op> backfiller::plan_parent_shares(
    const std::vector<bson::document>& batch, const backfill_options& opts,
    const std::function<mapping::write_op(bson::document)>& make) const {
  // One completion per thread, each over a contiguous share of the batch's parents.
  std::vector<mapping::write_op> ops;
  const std::size_t parts = std::clamp<std::size_t>(opts.refill_threads, 1, batch.size());
  for (std::size_t part = 0; part < parts; ++part) {
    bson::array ids;
    for (std::size_t i = part * batch.size() / parts; i < (part + 1) * batch.size() / parts; ++i) {
      const bson::value* id = batch[i].get("_id");
      // A parent whose _id cannot be a reference is not refilled (verify skips it too).
      if (id != nullptr && !mapping::reference_problem(*id)) ids.push_back(*id);
    }
    if (ids.empty()) continue;
    ops.push_back(make(parents_filter(std::move(ids))));
  }
  return ops;
}

mongo::result<std::vector<mapping::write_op>> backfiller::plan_copies(
    const mapping::mapping& m, std::vector<bson::document>& batch) const {
  // What a fresh insert of each source document plans, for this mapping only.
  std::vector<mapping::write_op> ops;
  std::vector<mapping::write_op> planned;
  auto computed = compute_fields(conn_, m, batch);
  if (!computed) return computed.error();
  std::vector<std::vector<mapping::computed_failure>> failures(batch.size());
  for (auto& f : *computed)
    failures[f.doc].push_back(std::move(f.what));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto& doc = batch[i];
    mapping::change_event ev;
    ev.computed_failures = std::move(failures[i]);
    ev.op = mapping::operation::insert;
    ev.op_name = "insert";
    ev.source = m.source;
    if (const bson::value* id = doc.get("_id")) ev.id = *id;
    ev.full_document = std::move(doc);
    planned.clear();
    planner_.plan(ev, planned);
    for (auto& op : planned) {
      // Dead letters too: a source whose key cannot be followed is reported, not skipped.
      if (op.source_mapping == &m && (op.as<mapping::update_write>() != nullptr ||
                                      op.as<mapping::dead_letter_write>() != nullptr)) {
        ops.push_back(std::move(op));
      }
    }
  }
  return ops;
}

mongo::status backfiller::apply_batch(const mapping::mapping& m,
                                      const std::vector<mapping::write_op>& ops,
                                      const backfill_options& opts) {
  const sink::writer_options wo{meta_db_, opts.dry_run};
  if (ops.size() <= 1 || !plan_walk(m, planner_).parallel_refills) {
    return sink::writer(conn_, metrics_, wo).apply(ops, {}, m.source);
  }
  // The refills are independent: each runs on its own thread with its own writer.
  std::vector<mongo::status> results(ops.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      threads.emplace_back([&, i] {
        results[i] = sink::writer(conn_, metrics_, wo).apply(std::span(&ops[i], 1), {}, m.source);
      });
    }
  }
  for (const auto& st : results) {
    if (!st) return st;
  }
  return {};
}

std::optional<std::uint64_t> count_documents(mongo::connection& conn, const mapping::ns& ns) {
  auto reply = conn.command(ns.db, bson::document{{"count", ns.coll}});
  if (!reply) return std::nullopt;
  const bson::value* n = reply->get("n");
  if (n == nullptr || !n->is_number()) return std::nullopt;
  return static_cast<std::uint64_t>(n->to_double());
}

mongo::status backfiller::recheck_copies(const mapping::mapping& m,
                                         std::vector<bson::document> written,
                                         const mongo::find_options& find,
                                         const backfill_options& opts, std::stop_token& stop) {
  auto less = [](const bson::value& a, const bson::value& b) { return bson::compare(a, b) < 0; };
  mongo::find_options again;
  again.projection = find.projection;
  // A source written more often than a read takes changes every time: only a stop ends that.
  while (!written.empty() && !opts.dry_run && !stop.stop_requested()) {
    std::map<bson::value, std::size_t, decltype(less)> at(less);
    bson::array ids;
    for (std::size_t i = 0; i < written.size(); ++i) {
      const bson::value* id = written[i].get("_id");
      if (id != nullptr && !mapping::reference_problem(*id)) {
        at.emplace(*id, i);
        ids.push_back(*id);
      }
    }
    auto now = conn_.find(m.source.db, m.source.coll,
                          bson::document{{"_id", bson::document{{"$in", std::move(ids)}}}}, again);
    if (!now) return now.error();
    std::vector<bson::document> changed;
    for (auto& doc : *now) {
      const bson::value* id = doc.get("_id");
      auto it = id != nullptr ? at.find(*id) : at.end();
      // identical, not ==: a NaN is unequal to itself, and a source holding one was read
      // again and rewritten for ever.
      if (it == at.end() || !bson::identical(written[it->second], doc))
        changed.push_back(std::move(doc));
    }
    written = changed;
    const auto ops = plan_batch(m, changed, opts);
    if (!ops) return ops.error();
    if (auto st = apply_batch(m, *ops, opts); !st) return st;
  }
  return {};
}

mongo::result<std::int64_t> activation_of(mongo::connection& conn, const std::string& meta_db,
                                          const std::string& name, const std::string& fingerprint) {
  auto doc = conn.find_one(meta_db, mappings_collection, bson::document{{"_id", name}});
  if (!doc) return doc.error();
  if (!*doc) return std::int64_t{0};
  const bson::value* print = (*doc)->get("fingerprint");
  const bson::value* n = (*doc)->get("activation");
  if (print == nullptr || !print->is_string() || print->as_string() != fingerprint ||
      n == nullptr || !n->is_number())
    return std::int64_t{0};
  return static_cast<std::int64_t>(n->to_double());
}

mongo::result<backfiller::position> backfiller::resume_point(const mapping::mapping& m,
                                                             const std::string& fingerprint,
                                                             const backfill_options& opts,
                                                             bool first_attempt,
                                                             mapping_backfill& out) {
  // Where to start: after the stored lastKey of an unfinished run of the same definition, in
  // its same activation (put back after another one ran, it starts over).
  auto activation = activation_of(conn_, meta_db_, m.name, fingerprint);
  if (!activation) return activation.error();
  position at{std::nullopt, wall_ms()};
  at.activation = *activation;
  auto stored = conn_.find_one(meta_db_, backfill_collection, bson::document{{"_id", m.name}});
  if (!stored) return stored.error();
  if (!*stored || (first_attempt && opts.restart)) return at;
  const bson::document& p = **stored;
  const bson::value* done = p.get("done");
  const bson::value* print = p.get("fingerprint");
  const bool unfinished = done != nullptr && done->is<bool>() && !done->as<bool>();
  const bson::value* ran_for = p.get("activation");
  const bool same =
      print != nullptr && print->is_string() && print->as_string() == fingerprint &&
      (ran_for != nullptr && ran_for->is_number() ? static_cast<std::int64_t>(ran_for->to_double())
                                                  : 0) == at.activation;
  if (unfinished && same) {
    if (const bson::value* k = p.get("lastKey")) at.last_key = *k;
    if (const bson::value* d = p.get("documents"); d != nullptr && d->is_number()) {
      out.documents = static_cast<std::uint64_t>(d->to_double());
    }
    if (const bson::value* t = p.get("startedAt"); t != nullptr && t->is<bson::date_time>()) {
      at.started_ms = t->as<bson::date_time>().millis;
    }
    const bson::value* phase = p.get("phase");
    at.sweeping = phase != nullptr && phase->is_string() && phase->as_string() == "targets";
    if (const bson::value* n = p.get("targets"); at.sweeping && n != nullptr && n->is_number()) {
      at.targets = static_cast<std::uint64_t>(n->to_double());
    }
  } else if (first_attempt && unfinished) {
    log::warn("backfill", "the mapping changed since its unfinished backfill; starting over",
              {{"mapping", m.name}});
  }
  return at;
}

mongo::status backfiller::save_progress(const mapping::mapping& m, const std::string& fingerprint,
                                        const mapping::ns& walked, const position& at, bool done,
                                        walked_count walked_so_far, const backfill_options& opts) {
  if (opts.dry_run) return {};
  bson::document doc{{"_id", m.name}};
  if (at.last_key) doc.append("lastKey", *at.last_key);
  doc.append("done", done);
  doc.append("startedAt", bson::date_time{at.started_ms});
  doc.append("updatedAt", bson::date_time{wall_ms()});
  doc.append("documents", static_cast<std::int64_t>(walked_so_far.documents));
  if (walked_so_far.total) doc.append("total", static_cast<std::int64_t>(*walked_so_far.total));
  doc.append("fingerprint", fingerprint);
  doc.append("activation", at.activation);
  doc.append("kind", std::string(m.kind_name()));
  doc.append("collection", walked.full());
  if (at.sweeping) {
    doc.append("phase", std::string("targets"));
    doc.append("targets", static_cast<std::int64_t>(at.targets));
  }
  return conn_.replace_one(meta_db_, backfill_collection, bson::document{{"_id", m.name}}, doc,
                           true);
}

mongo::status backfiller::write_batch(const mapping::mapping& m, bool recheck_sources,
                                      std::vector<bson::document>& batch,
                                      const mongo::find_options& find, const backfill_options& opts,
                                      std::stop_token& stop) {
  // Copies: the daemon's stream of the source may write newer copies meanwhile (beside a
  // re-sync of a fillNewTargets target, or a backfill run by hand); a copy written from this
  // older read must not stay the last one written, so the batch is read again.
  std::vector<bson::document> read;
  if (recheck_sources) read = batch;
  const auto ops = plan_batch(m, batch, opts);
  if (!ops) return ops.error();
  if (auto st = apply_batch(m, *ops, opts); !st) return st;
  return recheck_copies(m, std::move(read), find, opts, stop);
}

mongo::status backfiller::sweep_batch(const mapping::mapping& m, const mapping::copy_kind& kind,
                                      std::vector<bson::document>& batch,
                                      const mongo::find_options& find, const backfill_options& opts,
                                      mapping_backfill& out, std::stop_token& stop) {
  auto found = read_sources(conn_, m, kind, batch, find);
  if (!found) return found.error();
  const auto planned = orphan_sweep(planner_, m, kind)
                           .plan(batch, [&](const bson::value& key) -> const bson::document* {
                             auto it = found->find(key);
                             return it == found->end() ? nullptr : &it->second;
                           });
  if (planned.ops.empty()) return {};
  if (auto st = apply_batch(m, planned.ops, opts); !st) return st;
  out.orphans_unset += planned.targets;
  if (opts.dry_run) return {};
  // A source inserted after it was looked up may have had its copies written by the stream
  // before these unsets: the sources are read again, and those that exist now are written
  // (and rechecked) as the first phase writes them. One inserted after this read is the
  // stream's to write, after the unsets.
  auto now = conn_.find(
      m.source.db, m.source.coll,
      bson::document{{kind.source_key, mapping::keys_match(kind.source_key, planned.keys)}}, find);
  if (!now) return now.error();
  if (now->empty()) return {};
  return write_batch(m, true, *now, find, opts, stop);
}

// One attempt at one mapping's backfill: what it walks and where it stands (backfill_one).
struct backfiller::walk_state {
  const mapping::mapping& m;
  const backfill_options& opts;
  mapping_backfill& out;
  const walk_plan walk;
  const mapping::copy_kind* const sweeps;  // a copy that unsets the copies of gone sources
  const std::string fingerprint;
  position at;
  const std::optional<std::uint64_t> total;  // documents the walked collection held at first
  progress_reporter progress;
  mongo::find_options find;  // of the walked documents, in _id order
};

mongo::status backfiller::backfill_one(const mapping::mapping& m, const backfill_options& opts,
                                       bool first_attempt, clock::time_point began,
                                       std::stop_token& stop, mapping_backfill& out) {
  const walk_plan walk = plan_walk(m, planner_);
  const mapping::copy_kind* sweeps = orphan_sweep::kind_of(m);
  const std::string fingerprint = m.fingerprint();
  auto resumed = resume_point(m, fingerprint, opts, first_attempt, out);
  if (!resumed) return resumed.error();
  position at = *resumed;
  if (at.sweeping && sweeps == nullptr) {
    at.sweeping = false;
    at.last_key.reset();
    at.targets = 0;
  }
  // Known before the first save, so that status can tell how far a backfill has come.
  const std::optional<std::uint64_t> total = count_documents(conn_, walk.walked);
  mongo::find_options find;
  find.sort = bson::document{{"_id", 1}};
  find.projection = walk.projection;
  find.batch_size = static_cast<std::int32_t>(opts.batch_size);
  walk_state a{m,
               opts,
               out,
               walk,
               sweeps,
               fingerprint,
               std::move(at),
               total,
               progress_reporter(m.name, began, opts, total),
               std::move(find)};

  if (first_attempt) {
    announce(m, a.at.sweeping ? m.target : walk.walked, a.at.last_key, out);
    out.resumed_in_targets = a.at.sweeping && a.at.last_key.has_value();
  }
  if (!a.at.last_key && !a.at.sweeping) {
    out.documents = 0;
    // Stored at once, so that even a backfill killed before its first batch is on record.
    if (auto st = save(a, false); !st) return st;
  }
  auto walked = a.at.sweeping ? mongo::result<bool>(true) : walk_sources(a, stop);
  if (walked && *walked && a.at.sweeping) walked = walk_targets(a, stop);
  if (!walked) return walked.error();
  if (!*walked) {
    log::info("backfill", "stopped; progress is stored, a new backfill continues from here",
              {{"mapping", m.name},
               {"documents", out.documents},
               {"phase", a.at.sweeping ? "targets" : "sources"},
               {"after", a.at.last_key ? bson::to_json(*a.at.last_key) : std::string("(start)")}});
    return {};
  }
  if (auto saved = save(a, true); !saved) return saved;
  out.done = true;
  a.progress.report(out, true);
  return {};
}

mongo::status backfiller::save(walk_state& a, bool done) {
  return save_progress(a.m, a.fingerprint, a.walk.walked, a.at, done, {a.out.documents, a.total},
                       a.opts);
}

mongo::result<bool> backfiller::walk_sources(walk_state& a, std::stop_token& stop) {
  auto walked = walk_phase(
      a, a.walk.walked,
      a.at.last_key ? mapping::after_key_filter(*a.at.last_key) : bson::document{}, a.find,
      [&](std::vector<bson::document>& batch) {
        return write_batch(a.m, a.walk.recheck_sources, batch, a.find, a.opts, stop);
      },
      stop);
  if (!walked || !*walked || a.sweeps == nullptr) return walked;
  a.at = position{std::nullopt, a.at.started_ms, true, 0, a.at.activation};
  if (auto st = save(a, false); !st) return st.error();
  log::info("backfill", "sources done; unsetting the copies of sources that no longer exist",
            {{"mapping", a.m.name}, {"collection", a.m.target.full()}});
  return true;
}

mongo::result<bool> backfiller::walk_targets(walk_state& a, std::stop_token& stop) {
  const orphan_sweep sweep(planner_, a.m, *a.sweeps);
  mongo::find_options targets;
  targets.sort = a.find.sort;
  targets.projection = copy_target_projection(a.m, *a.sweeps);
  targets.batch_size = a.find.batch_size;
  return walk_phase(
      a, a.m.target, sweep.filter(a.at.last_key), targets,
      [&](std::vector<bson::document>& batch) {
        return sweep_batch(a.m, *a.sweeps, batch, a.find, a.opts, a.out, stop);
      },
      stop);
}

mongo::result<bool> backfiller::walk_phase(walk_state& a, const mapping::ns& ns,
                                           const bson::document& filter,
                                           const mongo::find_options& find,
                                           const batch_handler& handle, std::stop_token& stop) {
  std::vector<bson::document> batch;
  batch.reserve(a.opts.batch_size);
  std::optional<mongo::driver_error> failed;
  bool stopped = false;
  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    const bson::value* id = batch.back().get("_id");
    bson::value last = id != nullptr ? *id : bson::value{};
    const std::size_t n = batch.size();
    auto written = handle(batch);
    batch.clear();
    // Stopped while writing it (its copies' recheck may be cut short): not stored, so the next
    // run writes the batch again.
    if (written && stop.stop_requested()) {
      stopped = true;
      return false;
    }
    if (written) written = batch_written(a, std::move(last), n);
    if (!written) failed = written.error();
    return !failed;
  };
  auto st = conn_.find_each(ns.db, ns.coll, filter, find, [&](bson::document&& doc) {
    if (stop.stop_requested()) {
      stopped = true;
      return false;
    }
    batch.push_back(std::move(doc));
    return batch.size() < a.opts.batch_size || flush();
  });
  if (failed) return *failed;
  if (!st) return st.error();
  if (stopped || stop.stop_requested()) return false;
  if (!flush()) {
    if (failed) return *failed;
    return false;
  }
  return true;
}

mongo::status backfiller::batch_written(walk_state& a, bson::value last, std::size_t n) {
  a.at.last_key = std::move(last);
  (a.at.sweeping ? a.at.targets : a.out.documents) += n;
  // Not stored: the next attempt walks the batch again (its writes are idempotent).
  if (auto st = save(a, false); !st) return st;
  if (a.at.sweeping) {
    a.out.run_targets += n;
  } else {
    a.out.run_documents += n;
    metrics_.count_backfill(a.m.name, n);
  }
  a.progress.report(a.out, false);
  return {};
}

}  // namespace denormd::ops
