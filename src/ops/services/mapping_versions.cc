#include "ops/services/mapping_versions.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "bson/json.h"
#include "common/clock.h"
#include "ops/commands/backfiller.h"

namespace denormd::ops {

namespace {

// The mapping's file as it was loaded (Extended JSON), or nothing when it cannot be read again.
std::optional<bson::document> definition_of(const mapping::mapping& m) {
  std::ifstream in(m.file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto doc = bson::parse_json(text.str());
  if (!doc) return std::nullopt;
  return std::move(doc).value();
}

std::int64_t date_ms(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is<bson::date_time>() ? v->as<bson::date_time>().millis : 0;
}

std::int64_t int_field(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is_number() ? static_cast<std::int64_t>(v->to_double()) : 0;
}

bool bool_field(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is<bool>() && v->as<bool>();
}

std::string string_field(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

const bson::array& array_field(const bson::document& d, const char* field) {
  static const bson::array none;
  const bson::value* v = d.get(field);
  return v != nullptr && v->is_array() ? v->as_array() : none;
}

mapping::ns ns_of(const bson::document& d) {
  return mapping::ns{string_field(d, "db"), string_field(d, "collection")};
}

bson::document ns_document(const mapping::ns& n) {
  return bson::document{{"db", n.db}, {"collection", n.coll}};
}

}  // namespace

mongo::status record_mappings(mongo::connection& conn, const std::string& meta_db,
                              const std::vector<mapping::mapping>& mappings, std::int64_t now_ms,
                              bool auto_backfill) {
  auto stored = conn.find(meta_db, mappings_collection, bson::document{}, mongo::find_options{});
  if (!stored) return stored.error();
  std::map<std::string, const bson::document*> by_name;
  for (const auto& d : *stored)
    by_name[string_field(d, "_id")] = &d;
  for (const auto& m : mappings) {
    const std::string fingerprint = m.fingerprint();
    std::int64_t since = now_ms;
    // The first one is 0, as a backfill run before the mapping was ever recorded says.
    std::int64_t activation = 0;
    if (auto it = by_name.find(m.name); it != by_name.end()) {
      const bson::document& old = *it->second;
      const bool same = string_field(old, "fingerprint") == fingerprint;
      // Unchanged, and not coming back from removal: it has been running all along.
      if (same && !bool_field(old, "removed")) since = date_ms(old, "activeSince");
      // Put back unchanged, it replays what it missed (mapping/reload_policy.h): the same
      // activation. Changed, its earlier backfills are of another activation.
      activation = int_field(old, "activation") + (same ? 0 : 1);
      by_name.erase(it);
    }
    bson::document doc{{"_id", m.name},
                       {"fingerprint", fingerprint},
                       {"activation", activation},
                       {"kind", std::string(m.kind_name())},
                       {"file", m.file},
                       {"activeSince", bson::date_time{since}},
                       {"removed", false},
                       {"autoBackfill", auto_backfill}};
    bson::array reads{ns_document(m.source)};
    if (m.fill_new_targets) reads.push_back(ns_document(m.target));
    doc.append("reads", std::move(reads));
    if (auto def = definition_of(m)) doc.append("definition", std::move(*def));
    if (auto st = conn.replace_one(meta_db, mappings_collection, bson::document{{"_id", m.name}},
                                   doc, true);
        !st) {
      return st;
    }
  }
  for (const auto& [name, old] : by_name) {
    bson::document doc = *old;
    if (bool_field(doc, "removed")) continue;  // recorded when it went
    doc.set("removed", true);
    if (auto st = conn.replace_one(meta_db, mappings_collection, bson::document{{"_id", name}}, doc,
                                   true);
        !st) {
      return st;
    }
  }
  return {};
}

mongo::result<std::vector<recorded_mapping>> read_recorded(mongo::connection& conn,
                                                           const std::string& meta_db) {
  auto stored = conn.find(meta_db, mappings_collection, bson::document{}, mongo::find_options{});
  if (!stored) return stored.error();
  std::vector<recorded_mapping> out;
  for (const auto& d : *stored) {
    recorded_mapping r{
        string_field(d, "_id"), string_field(d, "fingerprint"), bool_field(d, "removed"), {}, {}};
    for (const auto& n : array_field(d, "reads")) {
      if (n.is_document()) r.reads.push_back(ns_of(n.as_document()));
    }
    for (const auto& p : array_field(d, "stoppedAt")) {
      if (!p.is_document()) continue;
      const bson::document& pd = p.as_document();
      const bson::value* token = pd.get("token");
      if (token == nullptr || !token->is_document()) continue;
      stop_point point{ns_of(pd), token->as_document(), std::nullopt, string_field(pd, "filter")};
      if (const bson::value* t = pd.get("clusterTime"); t != nullptr && t->is<bson::timestamp>())
        point.token_time = t->as<bson::timestamp>();
      r.stopped_at.push_back(std::move(point));
    }
    out.push_back(std::move(r));
  }
  return out;
}

mongo::status forget_stopped_at(mongo::connection& conn, const std::string& meta_db,
                                const std::string& name) {
  const bson::document filter{{"_id", name}};
  const bson::document update{{"$unset", bson::document{{"stoppedAt", ""}}}};
  mongo::write_request r;
  r.filter = &filter;
  r.update = &update;
  auto out = conn.update_bulk(meta_db, mappings_collection, std::span(&r, 1), true);
  if (!out) return out.error();
  if (out->write_error) return *out->write_error;
  return {};
}

mongo::result<std::vector<mapping_version>> read_versions(mongo::connection& conn,
                                                          const std::string& meta_db) {
  mongo::find_options by_name;
  by_name.sort = bson::document{{"_id", 1}};
  auto stored = conn.find(meta_db, mappings_collection, bson::document{}, by_name);
  if (!stored) return stored.error();
  auto backfills = conn.find(meta_db, backfill_collection, bson::document{}, mongo::find_options{});
  if (!backfills) return backfills.error();
  std::vector<mapping_version> out;
  for (const auto& d : *stored) {
    mapping_version v;
    v.name = string_field(d, "_id");
    v.fingerprint = string_field(d, "fingerprint");
    v.active_since_ms = date_ms(d, "activeSince");
    v.removed = bool_field(d, "removed");
    v.activation = int_field(d, "activation");
    for (const auto& b : *backfills) {
      // A backfill of this definition's earlier time (before another one ran in between)
      // does not count: what ran in between wrote in its shape.
      if (string_field(b, "_id") != v.name || string_field(b, "fingerprint") != v.fingerprint ||
          int_field(b, "activation") != v.activation)
        continue;
      v.backfill = bool_field(b, "done") ? backfill_state::done : backfill_state::running;
      const bson::value* n = b.get("documents");
      if (n != nullptr && n->is_number())
        v.backfill_documents = static_cast<std::int64_t>(n->to_double());
      const bson::value* t = b.get("total");
      if (t != nullptr && t->is_number())
        v.backfill_total = static_cast<std::int64_t>(t->to_double());
    }
    const bson::value* automatic = d.get("autoBackfill");
    if (v.backfill == backfill_state::pending && automatic != nullptr && automatic->is<bool>() &&
        !automatic->as<bool>())
      v.backfill = backfill_state::disabled;
    out.push_back(std::move(v));
  }
  return out;
}

std::string_view backfill_state_name(backfill_state s) {
  switch (s) {
    case backfill_state::done:
      return "done";
    case backfill_state::running:
      return "running";
    case backfill_state::pending:
      return "pending";
    case backfill_state::disabled:
      return "disabled";
  }
  return "?";
}

std::string to_text(const std::vector<mapping_version>& versions) {
  std::string out = "mappings:\n";
  if (versions.empty()) out += "  (none recorded yet: denormd run records them at start)\n";
  for (const auto& v : versions) {
    out += "  " + v.name + ": fingerprint " + v.fingerprint;
    if (v.removed) {
      out += ", removed\n";
      continue;
    }
    out += ", active since " + iso8601(v.active_since_ms) + ", backfill " +
           std::string(backfill_state_name(v.backfill));
    if (v.backfill == backfill_state::running && v.backfill_total > 0) {
      const auto percent =
          std::min<std::int64_t>(100, v.backfill_documents * 100 / v.backfill_total);
      out += " " + std::to_string(percent) + "% (" + std::to_string(v.backfill_documents) + " of " +
             std::to_string(v.backfill_total) + " documents)";
    } else if (v.backfill == backfill_state::running) {
      out += " (" + std::to_string(v.backfill_documents) + " documents so far)";
    }
    if (v.backfill == backfill_state::pending || v.backfill == backfill_state::disabled)
      out +=
          " (documents written before it became active may have the old shape: run denormd "
          "backfill --mapping " +
          v.name + ")";
    out += "\n";
  }
  return out;
}

bson::array to_bson_array(const std::vector<mapping_version>& versions) {
  bson::array out;
  for (const auto& v : versions) {
    bson::document d{{"mapping", v.name},
                     {"fingerprint", v.fingerprint},
                     {"activeSince", iso8601(v.active_since_ms)},
                     {"removed", v.removed},
                     {"backfill", std::string(backfill_state_name(v.backfill))}};
    if (v.backfill == backfill_state::running) {
      d.append("backfillDocuments", v.backfill_documents);
      if (v.backfill_total > 0) d.append("backfillTotal", v.backfill_total);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace denormd::ops
