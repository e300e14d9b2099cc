#include "ops/backfiller.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "bson/json.h"
#include "common/log.h"
#include "mapping/change_event.h"
#include "ops/backoff.h"
#include "ops/drift.h"
#include "sink/writer.h"

namespace denormd::ops {

namespace {

using clock = std::chrono::steady_clock;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

// A sample value of each BSON type, to rank the types with bson::canonical_rank.
const std::vector<std::pair<bson::type, bson::value>>& type_samples() {
  static const std::vector<std::pair<bson::type, bson::value>> samples = {
      {bson::type::min_key, bson::min_key{}},
      {bson::type::null, bson::null_t{}},
      {bson::type::undefined, bson::undefined_t{}},
      {bson::type::int32, std::int32_t{0}},
      {bson::type::int64, std::int64_t{0}},
      {bson::type::double_, 0.0},
      {bson::type::decimal128, bson::decimal128{}},
      {bson::type::string, ""},
      {bson::type::symbol, bson::symbol{}},
      {bson::type::document, bson::document{}},
      {bson::type::array, bson::array{}},
      {bson::type::binary, bson::binary{}},
      {bson::type::oid, bson::oid{}},
      {bson::type::boolean, false},
      {bson::type::date, bson::date_time{}},
      {bson::type::timestamp, bson::timestamp{}},
      {bson::type::regex, bson::regex{}},
      {bson::type::code, bson::code{}},
      {bson::type::max_key, bson::max_key{}},
  };
  return samples;
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::optional<std::uint64_t> count_documents(mongo::connection& conn, const mapping::ns& ns) {
  auto reply = conn.command(ns.db, bson::document{{"count", ns.coll}});
  if (!reply) return std::nullopt;
  const bson::value* n = reply->get("n");
  if (n == nullptr || !n->is_number()) return std::nullopt;
  return static_cast<std::uint64_t>(n->to_double());
}

// The collection a mapping's backfill walks: its sources (copy) or its parents (recent).
const mapping::ns& walked(const mapping::mapping& m) {
  return m.kind == mapping::mapping_kind::copy ? m.source : m.target;
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

bson::document after_key_filter(const bson::value& last) {
  const int rank = bson::canonical_rank(last);
  bson::array later;
  for (const auto& [t, sample] : type_samples()) {
    if (bson::canonical_rank(sample) > rank) later.push_back(static_cast<std::int32_t>(t));
  }
  bson::document after{{"_id", bson::document{{"$gt", last}}}};
  if (later.empty()) return after;
  return bson::document{
      {"$or", bson::array{after, bson::document{{"_id", bson::document{{"$type", later}}}}}}};
}

std::string mapping_fingerprint(const mapping::mapping& m) {
  std::string s = m.kind == mapping::mapping_kind::copy ? "copy" : "recent";
  s += "|" + m.source.full() + "|" + m.target.full() + "|" + m.into + "|";
  for (const auto& f : m.fields)
    s += f.name + "=" + f.source_path + ",";
  s += "|" + m.source_key + "|" + m.target_key + "|" + m.target_array + "|";
  if (m.where) s += bson::to_json(m.where->filter(), bson::json_mode::canonical);
  s += "|" + m.parent_key + "|" + m.parent_field + "|";
  if (m.filter) s += bson::to_json(m.filter->filter(), bson::json_mode::canonical);
  for (const auto& k : m.sort)
    s += "|" + k.name + ":" + std::to_string(k.direction);
  s += "|" + std::to_string(m.limit) + "|" + std::to_string(static_cast<int>(m.on_source_delete));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return hex;
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
    for (bool first = true;; first = false) {
      const std::uint64_t before = mb.run_documents;
      auto st = backfill_one(*m, opts, first, began, stop, mb);
      if (st) break;
      if (!st.error().transient()) return st.error();
      if (mb.run_documents > before) retry.reset();
      if (opts.give_up_after.count() > 0 && retry.failing_for() >= opts.give_up_after) {
        return st.error();
      }
      log::warn("backfill", "transient failure; continuing after the last stored batch",
                {{"mapping", m->name}, {"error", st.error().to_string()}});
      if (!retry.wait(stop)) break;
    }
    out.mappings.push_back(std::move(mb));
    if (!out.mappings.back().done) return out;
  }
  out.complete = true;
  return out;
}

std::vector<mapping::write_op> backfiller::plan_batch(const mapping::mapping& m,
                                                      std::vector<bson::document>& batch,
                                                      const backfill_options& opts) const {
  std::vector<mapping::write_op> ops;
  if (m.kind == mapping::mapping_kind::recent) {
    // One refill per thread, each over a contiguous share of the batch's parents.
    const std::size_t parts = std::clamp<std::size_t>(opts.refill_threads, 1, batch.size());
    for (std::size_t part = 0; part < parts; ++part) {
      bson::array ids;
      for (std::size_t i = part * batch.size() / parts; i < (part + 1) * batch.size() / parts;
           ++i) {
        if (const bson::value* id = batch[i].get("_id")) ids.push_back(*id);
      }
      if (!ids.empty()) ops.push_back(refill_for(m, parents_filter(std::move(ids))));
    }
    return ops;
  }
  // What a fresh insert of each source document plans, for this mapping only.
  std::vector<mapping::write_op> planned;
  for (auto& doc : batch) {
    mapping::change_event ev;
    ev.op = mapping::operation::insert;
    ev.op_name = "insert";
    ev.source = m.source;
    if (const bson::value* id = doc.get("_id")) ev.id = *id;
    ev.full_document = std::move(doc);
    planned.clear();
    planner_.plan(ev, planned);
    for (auto& op : planned) {
      if (op.source_mapping == &m && (op.kind == mapping::write_kind::update_one ||
                                      op.kind == mapping::write_kind::update_many)) {
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
  if (ops.size() <= 1 || m.kind == mapping::mapping_kind::copy) {
    return sink::writer(conn_, metrics_, wo).apply(ops, {}, m.source);
  }
  // The refills are independent: each runs on its own thread with its own writer.
  std::vector<mongo::status> results(ops.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      threads.emplace_back(
          [&, i] { results[i] = sink::writer(conn_, metrics_, wo).apply({ops[i]}, {}, m.source); });
    }
  }
  for (const auto& st : results) {
    if (!st) return st;
  }
  return {};
}

mongo::status backfiller::recheck_copies(const mapping::mapping& m,
                                         std::vector<bson::document> written,
                                         const mongo::find_options& find,
                                         const backfill_options& opts) {
  auto less = [](const bson::value& a, const bson::value& b) { return bson::compare(a, b) < 0; };
  mongo::find_options again;
  again.projection = find.projection;
  while (!written.empty() && !opts.dry_run) {
    std::map<bson::value, std::size_t, decltype(less)> at(less);
    bson::array ids;
    for (std::size_t i = 0; i < written.size(); ++i) {
      if (const bson::value* id = written[i].get("_id")) {
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
      if (it == at.end() || !(written[it->second] == doc)) changed.push_back(std::move(doc));
    }
    written = changed;
    const auto ops = plan_batch(m, changed, opts);
    if (auto st = apply_batch(m, ops, opts); !st) return st;
  }
  return {};
}

mongo::status backfiller::backfill_one(const mapping::mapping& m, const backfill_options& opts,
                                       bool first_attempt, clock::time_point began,
                                       std::stop_token& stop, mapping_backfill& out) {
  const mapping::ns& ns = walked(m);
  const std::string fingerprint = mapping_fingerprint(m);
  const bson::document progress_id{{"_id", m.name}};

  // Where to start: after the stored lastKey of an unfinished run of the same definition.
  std::optional<bson::value> last_key;
  std::int64_t started_ms = now_ms();
  auto stored = conn_.find_one(meta_db_, backfill_collection, progress_id);
  if (!stored) return stored.error();
  if (*stored && !(first_attempt && opts.restart)) {
    const bson::document& p = **stored;
    const bson::value* done = p.get("done");
    const bson::value* print = p.get("fingerprint");
    const bool same = print != nullptr && print->is_string() && print->as_string() == fingerprint;
    if (done != nullptr && done->is<bool>() && !done->as<bool>() && same) {
      if (const bson::value* k = p.get("lastKey")) last_key = *k;
      if (const bson::value* d = p.get("documents"); d != nullptr && d->is_number()) {
        out.documents = static_cast<std::uint64_t>(d->to_double());
      }
      if (const bson::value* s = p.get("startedAt"); s != nullptr && s->is<bson::date_time>()) {
        started_ms = s->as<bson::date_time>().millis;
      }
    } else if (first_attempt && done != nullptr && done->is<bool>() && !done->as<bool>()) {
      log::warn("backfill", "the mapping changed since its unfinished backfill; starting over",
                {{"mapping", m.name}});
    }
  }
  auto save = [&](bool done) -> mongo::status {
    if (opts.dry_run) return {};
    bson::document doc{{"_id", m.name}};
    if (last_key) doc.append("lastKey", *last_key);
    doc.append("done", done);
    doc.append("startedAt", bson::date_time{started_ms});
    doc.append("updatedAt", bson::date_time{now_ms()});
    doc.append("documents", static_cast<std::int64_t>(out.documents));
    doc.append("fingerprint", fingerprint);
    doc.append("kind", m.kind == mapping::mapping_kind::copy ? "copy" : "recent");
    doc.append("collection", ns.full());
    return conn_.replace_one(meta_db_, backfill_collection, progress_id, doc, true);
  };

  if (last_key) {
    if (first_attempt) {
      out.resumed_after = *last_key;
      log::info("backfill", "continuing an unfinished backfill",
                {{"mapping", m.name},
                 {"collection", ns.full()},
                 {"after", bson::to_json(*last_key)},
                 {"documents_done", out.documents}});
    }
  } else {
    if (first_attempt) {
      log::info("backfill", "starting", {{"mapping", m.name}, {"collection", ns.full()}});
    }
    out.documents = 0;
    // Stored at once, so that even a backfill killed before its first batch is on record.
    if (auto st = save(false); !st) return st;
  }

  backfill_progress progress{m.name, out.documents, 0, count_documents(conn_, ns), 0, false};
  auto last_log = clock::now();
  auto report = [&](bool done) {
    progress.documents = out.documents;
    progress.run_documents = out.run_documents;
    progress.elapsed_seconds = seconds_since(began);
    progress.done = done;
    if (opts.on_progress) {
      opts.on_progress(progress);
    } else if (done || clock::now() - last_log >= opts.log_interval) {
      last_log = clock::now();
      log::info(
          "backfill", progress_line(progress),
          {{"mapping", m.name}, {"documents", out.documents}, {"rate", rate_per_second(progress)}});
    }
  };

  mongo::find_options find;
  find.sort = bson::document{{"_id", 1}};
  if (m.kind == mapping::mapping_kind::copy) {
    for (const auto& f : planner_.document_fields(m.source))
      find.projection.append(f, 1);
  } else {
    find.projection.append("_id", 1);
    if (m.parent_field != "_id") find.projection.append(m.parent_field, 1);
  }
  find.batch_size = static_cast<std::int32_t>(opts.batch_size);

  std::vector<bson::document> batch;
  batch.reserve(opts.batch_size);
  std::optional<mongo::driver_error> failed;

  // Writes one batch and stores the progress it made.
  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    const bson::value batch_last =
        batch.back().get("_id") != nullptr ? *batch.back().get("_id") : bson::value{};
    const std::size_t n = batch.size();
    // Copies: the daemon's stream of the source may write newer copies meanwhile (beside a
    // re-sync of a fillNewTargets target, or a backfill run by hand); a copy written from
    // this older read must not stay the last one written, so the batch is read again.
    std::vector<bson::document> read;
    if (m.kind == mapping::mapping_kind::copy) read = batch;
    const auto ops = plan_batch(m, batch, opts);
    batch.clear();
    if (auto st = apply_batch(m, ops, opts); !st) {
      failed = st.error();
      return false;
    }
    if (auto st = recheck_copies(m, std::move(read), find, opts); !st) {
      failed = st.error();
      return false;
    }
    last_key = batch_last;
    out.documents += n;
    if (auto st = save(false); !st) {
      // Not stored: the next attempt walks the batch again (its writes are idempotent).
      failed = st.error();
      return false;
    }
    out.run_documents += n;
    metrics_.count_backfill(m.name, n);
    report(false);
    return true;
  };

  bool stopped = false;
  const bson::document filter = last_key ? after_key_filter(*last_key) : bson::document{};
  auto st = conn_.find_each(ns.db, ns.coll, filter, find, [&](bson::document&& doc) {
    if (stop.stop_requested()) {
      stopped = true;
      return false;
    }
    batch.push_back(std::move(doc));
    return batch.size() < opts.batch_size || flush();
  });
  if (failed) return *failed;
  if (!st) return st;
  if (stopped || stop.stop_requested()) {
    log::info("backfill", "stopped; progress is stored, a new backfill continues from here",
              {{"mapping", m.name},
               {"documents", out.documents},
               {"after", last_key ? bson::to_json(*last_key) : std::string("(start)")}});
    return {};
  }
  if (!flush()) return *failed;
  if (auto saved = save(true); !saved) return saved;
  out.done = true;
  report(true);
  return {};
}

}  // namespace denormd::ops
