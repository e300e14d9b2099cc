#include "app/operator_status.h"

#include <algorithm>
#include <map>
#include <set>

#include "app/version.h"
#include "bson/json.h"
#include "common/clock.h"
#include "ops/commands/status_probe.h"
#include "ops/services/mapping_versions.h"
#include "sink/writer.h"

namespace denormd::app {

namespace {

bson::document namespace_status(const status_context& c, const ops::source_status& s,
                                std::int64_t now) {
  bson::document n{{"namespace", s.source.full()}};
  const auto live = c.pipelines.status(s.source);
  n.append("held", live.has_value());
  n.append("streaming", live && live->ready);
  n.append("state", live ? live->state : std::string(c.instance.empty() ? "starting" : "standby"));
  if (live) {
    n.append("lagSeconds", live->lag_seconds);
    n.append("checkpointAgeSeconds", live->checkpoint_age_seconds);
    n.append("appliedEvents", static_cast<std::int64_t>(live->applied_events));
  } else if (s.saved_ms > 0) {
    n.append("checkpointAgeSeconds", static_cast<double>(now - s.saved_ms) / 1000.0);
  }
  if (s.event_ms > 0) n.append("lastEventMs", s.event_ms);
  if (s.headroom_seconds) n.append("headroomSeconds", *s.headroom_seconds);
  n.append("history", s.history == ops::history_state::reachable ? "reachable"
                      : s.history == ops::history_state::lost    ? "lost"
                      : s.history == ops::history_state::unknown ? "unknown"
                                                                 : "no checkpoint");
  if (s.lease && !s.lease->owner.empty()) {
    n.append("lease", bson::document{{"owner", s.lease->owner},
                                     {"epoch", s.lease->epoch},
                                     {"expiresMs", s.lease->expires_ms},
                                     {"expired", s.lease->expired}});
  }
  bson::array lag;
  for (const auto& sample : c.pipelines.lag_history(s.source))
    lag.push_back(bson::array{sample.at_ms, sample.lag_seconds});
  n.append("lag", std::move(lag));
  return n;
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

mongo::result<bson::array> newest_letters(const status_context& c) {
  mongo::find_options newest;
  newest.sort = bson::document{{"_id", -1}};
  newest.limit = newest_dead_letters;
  auto docs = c.conn.find(c.meta_db, sink::deadletter_collection, bson::document{}, newest);
  if (!docs) return docs.error();
  bson::array out;
  for (const auto& d : *docs) {
    const bson::value* at = d.get("at");
    const bson::value* mapping = d.get("mapping");
    const bson::value* filter = d.get("filter");
    const bson::value* error = d.get("error");
    std::string reason;
    if (error != nullptr && error->is_document()) {
      const bson::value* r = error->as_document().get("reason");
      const bson::value* m = error->as_document().get("message");
      reason = r != nullptr && r->is_string()   ? r->as_string()
               : m != nullptr && m->is_string() ? m->as_string()
                                                : bson::to_json(*error);
    }
    out.push_back(bson::document{
        {"atMs", at != nullptr && at->is<bson::date_time>() ? at->as<bson::date_time>().millis : 0},
        {"mapping", mapping != nullptr && mapping->is_string() ? mapping->as_string() : ""},
        {"document", filter != nullptr ? bson::to_json(*filter) : ""},
        {"reason", reason}});
  }
  return out;
}

bson::array mapping_list(const status_context& c, const std::vector<ops::mapping_version>& versions,
                         const std::map<std::string, std::int64_t>& letters) {
  const auto planner = c.running.planner();
  bson::array out;
  for (const auto& m : planner->mappings()) {
    bson::document d{{"name", m.name},
                     {"kind", std::string(m.kind_name())},
                     {"source", m.source.full()},
                     {"target", m.target.full()},
                     {"fingerprint", m.fingerprint()}};
    const auto v = std::find_if(versions.begin(), versions.end(),
                                [&](const ops::mapping_version& x) { return x.name == m.name; });
    if (v != versions.end()) {
      d.append("activeSinceMs", v->active_since_ms);
      bson::document backfill{{"state", std::string(ops::backfill_state_name(v->backfill))}};
      if (v->backfill == ops::backfill_state::running) {
        backfill.append("documents", v->backfill_documents);
        if (v->backfill_total > 0) backfill.append("total", v->backfill_total);
      }
      d.append("backfill", std::move(backfill));
    }
    const auto n = letters.find(m.name);
    d.append("deadLetters", n == letters.end() ? std::int64_t{0} : n->second);
    out.push_back(std::move(d));
  }
  return out;
}

// With --ha: every instance that holds a lease, and what.
bson::array instance_list(const std::vector<ops::source_status>& sources) {
  std::map<std::string, std::set<std::string>> holds;
  for (const auto& s : sources) {
    if (s.lease && !s.lease->owner.empty() && !s.lease->expired)
      holds[s.lease->owner].insert(s.source.full());
  }
  bson::array out;
  for (const auto& [owner, units] : holds)
    out.push_back(
        bson::document{{"instance", owner}, {"holds", bson::array(units.begin(), units.end())}});
  return out;
}

}  // namespace

expected<std::string> read_operator_status(const status_context& c) {
  const std::int64_t now = wall_ms();
  ops::status_probe probe(c.conn, c.meta_db);
  auto sources = probe.run(c.running.watched());
  if (!sources) return fail("cannot read the checkpoints: " + sources.error().to_string());
  auto versions = ops::read_versions(c.conn, c.meta_db);
  if (!versions) return fail("cannot read the mapping versions: " + versions.error().to_string());
  auto counts = dead_letter_counts(c);
  if (!counts) return fail("cannot count the dead letters: " + counts.error().to_string());
  auto newest = newest_letters(c);
  if (!newest) return fail("cannot read the dead letters: " + newest.error().to_string());

  bson::array namespaces;
  for (const auto& s : *sources)
    namespaces.push_back(namespace_status(c, s, now));
  bson::document out{{"version", denormd_version},
                     {"nowMs", now},
                     {"uptimeSeconds", static_cast<double>(now - c.started_ms) / 1000.0},
                     {"mappingsFolder", c.mappings_folder},
                     {"ha", !c.instance.empty()},
                     {"lifecycle", c.lifecycle},
                     {"namespaces", std::move(namespaces)},
                     {"mappings", mapping_list(c, *versions, *counts)},
                     {"deadLetters", std::move(*newest)}};
  if (!c.instance.empty()) {
    out.append("instance", c.instance);
    out.append("instances", instance_list(*sources));
  }
  return bson::to_json(out);
}

}  // namespace denormd::app
