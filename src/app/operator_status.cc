#include "app/operator_status.h"

#include <algorithm>
#include <set>

#include "app/version.h"
#include "bson/json.h"
#include "common/clock.h"
#include "sink/writer.h"

namespace denormd::app {

namespace {

constexpr status_thresholds thresholds;

std::string history_name(ops::history_state h) {
  switch (h) {
    case ops::history_state::reachable:
      return "reachable";
    case ops::history_state::lost:
      return "lost";
    case ops::history_state::unknown:
      return "unknown";
    case ops::history_state::no_checkpoint:
      return "no checkpoint";
  }
  return "unknown";
}

bson::array lag_array(const std::vector<std::pair<std::int64_t, double>>& samples) {
  bson::array out;
  for (const auto& [at, seconds] : samples)
    out.push_back(bson::array{at, seconds});
  return out;
}

// Per mapping, its dead letters in the collection.
mongo::result<std::map<std::string, std::int64_t>> dead_letter_counts(const status_context& c) {
  const bson::array pipeline{bson::document{
      {"$group", bson::document{{"_id", "$mapping"}, {"n", bson::document{{"$sum", 1}}}}}}};
  auto groups = c.conn.aggregate(c.meta_db, sink::deadletter_collection, pipeline);
  if (!groups) return groups.error();
  std::map<std::string, std::int64_t> out;
  for (const auto& g : *groups) {
    const bson::value* id = g.get("_id");
    const bson::value* n = g.get("n");
    if (id != nullptr && id->is_string() && n != nullptr && n->is_number())
      out[id->as_string()] = static_cast<std::int64_t>(n->to_double());
  }
  return out;
}

std::string string_at(const bson::document& d, std::string_view key) {
  const bson::value* v = d.get(key);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

// A dead letter as the page shows it: which document (its _id, else the write's filter), which
// field, and why. Values from users' documents are shown as JSON text, never interpreted.
bson::document letter_row(const bson::document& d) {
  const bson::value* at = d.get("at");
  std::string document;
  if (const bson::value* about = d.get("document"); about != nullptr && about->is_document()) {
    const bson::value* id = about->as_document().get("_id");
    document = string_at(about->as_document(), "ns") +
               (id != nullptr ? " _id " + bson::to_json(*id) : std::string());
  } else if (const bson::value* filter = d.get("filter");
             filter != nullptr && !(filter->is_document() && filter->as_document().empty())) {
    document = string_at(d, "target") + " " + bson::to_json(*filter);
  }
  std::string reason;
  if (const bson::value* error = d.get("error"); error != nullptr && error->is_document()) {
    reason = string_at(error->as_document(), "reason");
    if (reason.empty()) reason = string_at(error->as_document(), "message");
    if (reason.empty()) reason = bson::to_json(*error);
  }
  return bson::document{
      {"atMs", at != nullptr && at->is<bson::date_time>() ? at->as<bson::date_time>().millis : 0},
      {"mapping", string_at(d, "mapping")},
      {"document", document},
      {"field", string_at(d, "field")},
      {"reason", reason}};
}

mongo::result<bson::array> newest_letters(const status_context& c) {
  mongo::find_options newest;
  newest.sort = bson::document{{"_id", -1}};
  newest.limit = newest_dead_letters;
  auto docs = c.conn.find(c.meta_db, sink::deadletter_collection, bson::document{}, newest);
  if (!docs) return docs.error();
  bson::array out;
  for (const auto& d : *docs)
    out.push_back(letter_row(d));
  return out;
}

// With --ha: every live instance, what it holds, when the server last saw it, and how many of
// its namespaces stream as it reported.
bson::array instance_list(const std::vector<lease::instance_row>& rows) {
  bson::array out;
  for (const auto& i : rows) {
    if (!i.live) continue;
    std::int64_t streaming = 0;
    std::int64_t reported = 0;
    if (i.report) {
      for (const auto& u : i.report->units) {
        ++reported;
        if (u.streaming) ++streaming;
      }
    }
    bson::document d{{"instance", i.name},
                     {"holds", bson::array(i.holds.begin(), i.holds.end())},
                     {"seenSecondsAgo", static_cast<double>(i.age_ms) / 1000.0},
                     {"streaming", streaming},
                     {"reported", reported}};
    if (i.report) d.append("version", i.report->version);
    out.push_back(std::move(d));
  }
  return out;
}

// Why a namespace nobody streams is not streamed, from its lease.
std::string unheld_reason(const ops::source_status* s) {
  if (s == nullptr || !s->lease) return "no instance holds it yet";
  if (s->lease->owner.empty()) return "no instance holds it (its lease was released)";
  if (s->lease->expired) return "no instance holds it (" + s->lease->owner + "'s lease expired)";
  return "held by " + s->lease->owner + ", which has not reported it yet";
}

// What the server says of a namespace: headroom (none once history is lost), history, lease,
// and how old that reading is when the last one failed.
void append_server_facts(bson::document& n, const ops::source_status* s, bool read_ok,
                         double view_age) {
  if (s == nullptr) {
    n.append("history", "unknown");
    return;
  }
  const bool lost = s->history == ops::history_state::lost;
  if (s->headroom_seconds && !lost)
    n.append("headroomSeconds", s->headroom_passed ? 0.0 : *s->headroom_seconds);
  n.append("history", history_name(s->history));
  if (s->lease && !s->lease->owner.empty()) {
    n.append("lease", bson::document{{"owner", s->lease->owner},
                                     {"epoch", s->lease->epoch},
                                     {"expiresMs", s->lease->expires_ms},
                                     {"expired", s->lease->expired}});
  }
  if (!read_ok) n.append("serverReadAgeSeconds", view_age);
}

// `sinceMs`: since when the status reads fail.
bson::document mongodb_document(bool reachable, bool read_ok, std::int64_t since_ms,
                                const std::string& error, std::int64_t last_read_ms) {
  bson::document out{{"reachable", reachable}, {"readable", read_ok}};
  if (!read_ok) {
    out.append("sinceMs", since_ms);
    out.append("error", error);
  }
  if (last_read_ms > 0) out.append("lastReadMs", last_read_ms);
  return out;
}

// The banner's line: ok, warning (some lag past the amber threshold) or critical (a namespace
// not streaming, lag past the red threshold, or the status reads failing).
bson::document health_document(bool reachable, bool read_ok, std::int64_t streaming,
                               std::int64_t count, std::int64_t lag_warn,
                               std::int64_t lag_critical) {
  const std::string state = !read_ok || streaming < count || lag_critical > 0 ? "critical"
                            : lag_warn > 0                                    ? "warning"
                                                                              : "ok";
  std::string summary =
      std::to_string(streaming) + " of " + std::to_string(count) + " namespaces streaming";
  if (lag_critical + lag_warn > 0)
    summary += ", " + std::to_string(lag_critical + lag_warn) + " lagging";
  if (!reachable) {
    summary = "MongoDB cannot be reached; " + summary;
  } else if (!read_ok) {
    summary = "MongoDB refuses the status reads; " + summary;
  }
  return bson::document{
      {"state", state}, {"streaming", streaming}, {"namespaces", count}, {"summary", summary}};
}

}  // namespace

operator_status::operator_status(status_context c) : c_(std::move(c)) {}

mongo::result<operator_status::server_view> operator_status::read_server() {
  server_view v;
  v.read_ms = wall_ms();
  auto failed = [](std::string what, mongo::driver_error e) {
    e.message = what + ": " + e.message;
    return mongo::failure(std::move(e));
  };
  ops::status_probe probe(c_.conn, c_.meta_db);
  auto sources = probe.run(c_.running.watched());
  if (!sources) return failed("cannot read the checkpoints", sources.error());
  v.sources = std::move(*sources);
  v.instances = probe.instances();
  auto versions = ops::read_versions(c_.conn, c_.meta_db);
  if (!versions) return failed("cannot read the mapping versions", versions.error());
  v.versions = std::move(*versions);
  auto counts = dead_letter_counts(c_);
  if (!counts) return failed("cannot count the dead letters", counts.error());
  v.letter_counts = std::move(*counts);
  auto newest = newest_letters(c_);
  if (!newest) return failed("cannot read the dead letters", newest.error());
  v.newest_letters = std::move(*newest);
  return v;
}

bson::array operator_status::mapping_list(const server_view* view, std::int64_t now) {
  const auto planner = c_.running.planner();
  bson::array out;
  for (const auto& m : planner->mappings()) {
    bson::document d{{"name", m.name},
                     {"kind", std::string(m.kind_name())},
                     {"source", m.source.full()},
                     {"target", m.target.full()},
                     {"fingerprint", m.fingerprint()}};
    const ops::mapping_version* v = nullptr;
    if (view != nullptr) {
      for (const auto& x : view->versions) {
        if (x.name == m.name) v = &x;
      }
    }
    if (v != nullptr) {
      d.append("activeSinceMs", v->active_since_ms);
      bson::document backfill{{"state", std::string(ops::backfill_state_name(v->backfill))}};
      if (v->backfill == ops::backfill_state::running) {
        backfill.append("documents", v->backfill_documents);
        if (v->backfill_total > 0) backfill.append("total", v->backfill_total);
        // The rate from this status thread's own readings, and the time left at it.
        auto& seen = backfills_[m.name];
        if (seen.at_ms > 0 && view->read_ms > seen.at_ms &&
            v->backfill_documents >= seen.documents) {
          const double rate = static_cast<double>(v->backfill_documents - seen.documents) * 1000.0 /
                              static_cast<double>(view->read_ms - seen.at_ms);
          seen.rate = seen.rate > 0 ? (seen.rate + rate) / 2 : rate;
        }
        if (view->read_ms != seen.at_ms) {
          seen.at_ms = view->read_ms;
          seen.documents = v->backfill_documents;
        }
        if (seen.rate > 0) {
          backfill.append("documentsPerSecond", seen.rate);
          if (v->backfill_total > v->backfill_documents)
            backfill.append(
                "etaSeconds",
                static_cast<double>(v->backfill_total - v->backfill_documents) / seen.rate);
        }
      } else {
        backfills_.erase(m.name);
      }
      d.append("backfill", std::move(backfill));
    }
    if (view != nullptr) {
      const auto n = view->letter_counts.find(m.name);
      d.append("deadLetters", n == view->letter_counts.end() ? std::int64_t{0} : n->second);
    }
    if (c_.metrics != nullptr) d.append("writeAmplification", write_amplification(m.name, now));
    out.push_back(std::move(d));
  }
  return out;
}

bson::document operator_status::write_amplification(const std::string& mapping, std::int64_t now) {
  const auto totals = c_.metrics->fanout(mapping);
  auto& seen = fanouts_[mapping];
  seen.push_back({now, totals.sum, totals.count});
  // Keep the newest reading at or before the window's start, as the window's base.
  while (seen.size() > 2 && seen[1].at_ms <= now - amplification_window_ms)
    seen.pop_front();
  bson::document out{{"events", static_cast<std::int64_t>(totals.count)}};
  if (totals.count > 0) out.append("perEvent", totals.sum / static_cast<double>(totals.count));
  const fanout_seen& base = seen.front();
  if (totals.count > base.count) {
    out.append("recentEvents", static_cast<std::int64_t>(totals.count - base.count));
    out.append("recentPerEvent",
               (totals.sum - base.sum) / static_cast<double>(totals.count - base.count));
    out.append("windowSeconds", static_cast<double>(now - base.at_ms) / 1000.0);
  }
  return out;
}

operator_status::reading operator_status::take_reading() {
  reading r;
  r.now = wall_ms();
  auto fresh = read_server();
  // Unreachable: the streams cannot go on either. A server that answers but refuses the reads
  // (authorization, say) leaves the streams as they say they are.
  if (fresh) {
    last_ = std::move(*fresh);
    unreachable_since_ms_ = 0;
  } else {
    r.error = c_.conn.describe(fresh.error());
    r.reachable = fresh.error().from != mongo::driver_error::origin::network;
    if (unreachable_since_ms_ == 0) unreachable_since_ms_ = r.now;
  }
  r.read_ok = unreachable_since_ms_ == 0;
  r.view = last_ ? &*last_ : nullptr;
  if (r.view != nullptr) r.view_age = static_cast<double>(r.now - r.view->read_ms) / 1000.0;
  return r;
}

bson::document operator_status::namespace_entry(const mapping::ns& src, const reading& r,
                                                tally& t) const {
  const ops::source_status* s = nullptr;
  if (r.view != nullptr) {
    for (const auto& x : r.view->sources) {
      if (x.source == src) s = &x;
    }
  }
  const std::string unreachable = "MongoDB cannot be reached (" + r.error + ")";
  bson::document n{{"namespace", src.unit()}};
  const auto live = c_.pipelines.status(src);
  bool streaming = false;
  std::string state;
  std::optional<double> lag;
  if (live) {
    // This instance streams it: its own values, always current.
    streaming = live->ready && r.reachable;
    state = !r.reachable && live->ready ? unreachable : live->state;
    lag = live->lag_seconds;
    n.append("holder", c_.instance);
    n.append("checkpointAgeSeconds", live->checkpoint_age_seconds);
    n.append("appliedEvents", static_cast<std::int64_t>(live->applied_events));
    n.append("eventsPerSecond", live->events_per_second);
    n.append("errors", static_cast<std::int64_t>(live->errors));
    if (live->last_event_ms > 0) n.append("lastEventMs", live->last_event_ms);
    bson::array samples;
    for (const auto& sample : c_.pipelines.lag_history(src))
      samples.push_back(bson::array{sample.at_ms, sample.lag_seconds});
    n.append("lag", std::move(samples));
  } else if (s != nullptr && s->report) {
    // Another instance streams it: what it last reported, and how old that is.
    const auto& rep = *s->report;
    streaming = rep.streaming && r.reachable;
    state = r.reachable ? rep.state
                        : unreachable + "; " + s->reported_by + " last reported it " +
                              (rep.streaming ? "streaming" : rep.state);
    lag = rep.lag_seconds;
    n.append("holder", s->reported_by);
    n.append("reportAgeSeconds", static_cast<double>(s->report_age_ms) / 1000.0 + r.view_age);
    n.append("checkpointAgeSeconds", rep.checkpoint_age_seconds);
    n.append("appliedEvents", rep.applied_events);
    n.append("eventsPerSecond", rep.events_per_second);
    n.append("errors", rep.errors);
    if (rep.last_event_ms > 0) n.append("lastEventMs", rep.last_event_ms);
    n.append("lag", lag_array(rep.lag));
  } else {
    // Not started yet: what the start retries, if anything (refused credentials, say).
    const std::string waiting = c_.running.waiting_for();
    state = !r.reachable          ? unreachable
            : !waiting.empty()    ? "starting: " + waiting
            : c_.instance.empty() ? std::string("starting")
                                  : unheld_reason(s);
    if (s != nullptr && s->saved_ms > 0)
      n.append("checkpointAgeSeconds", static_cast<double>(r.now - s->saved_ms) / 1000.0);
    if (s != nullptr && s->event_ms > 0) n.append("lastEventMs", s->event_ms);
    n.append("lag", bson::array{});
  }
  n.append("held", live.has_value());
  n.append("streaming", streaming);
  n.append("state", state);
  if (lag) {
    n.append("lagSeconds", *lag);
    if (*lag >= thresholds.lag_critical_seconds) {
      ++t.lag_critical;
    } else if (*lag >= thresholds.lag_warn_seconds) {
      ++t.lag_warn;
    }
  }
  if (streaming) ++t.streaming;
  append_server_facts(n, s, r.read_ok, r.view_age);
  return n;
}

std::string operator_status::read() {
  const reading r = take_reading();
  bson::array namespaces;
  tally t;
  for (const auto& src : c_.running.watched())
    namespaces.push_back(namespace_entry(src, r, t));
  const auto count = static_cast<std::int64_t>(namespaces.size());
  bson::document out{
      {"version", denormd_version},
      {"nowMs", r.now},
      {"uptimeSeconds", static_cast<double>(r.now - c_.started_ms) / 1000.0},
      {"mappingsFolder", c_.mappings_folder},
      {"ha", !c_.instance.empty()},
      {"lifecycle", c_.lifecycle},
      {"mongodb", mongodb_document(r.reachable, r.read_ok, unreachable_since_ms_, r.error,
                                   r.view != nullptr ? r.view->read_ms : 0)},
      {"health",
       health_document(r.reachable, r.read_ok, t.streaming, count, t.lag_warn, t.lag_critical)},
      {"thresholds",
       bson::document{{"lagWarnSeconds", thresholds.lag_warn_seconds},
                      {"lagCriticalSeconds", thresholds.lag_critical_seconds},
                      {"headroomWarnSeconds", thresholds.headroom_warn_seconds},
                      {"headroomCriticalSeconds", thresholds.headroom_critical_seconds}}},
      {"namespaces", std::move(namespaces)},
      {"mappings", mapping_list(r.view, r.now)},
      {"deadLetters", r.view != nullptr ? r.view->newest_letters : bson::array{}}};
  if (const auto reload = c_.running.last_reload()) {
    bson::document rd{{"atMs", reload->at_ms}, {"ok", reload->ok}};
    if (!reload->detail.empty()) rd.append("detail", reload->detail);
    out.append("lastReload", std::move(rd));
  }
  if (!c_.instance.empty()) {
    out.append("instance", c_.instance);
    out.append("instances", r.view != nullptr ? instance_list(r.view->instances) : bson::array{});
  }
  return bson::to_json(out);
}

}  // namespace denormd::app
