#include "ops/mapping_versions.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "bson/json.h"
#include "common/clock.h"
#include "ops/backfiller.h"

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

bool bool_field(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is<bool>() && v->as<bool>();
}

std::string string_field(const bson::document& d, const char* field) {
  const bson::value* v = d.get(field);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

}  // namespace

mongo::status record_mappings(mongo::connection& conn, const std::string& meta_db,
                              const std::vector<mapping::mapping>& mappings, std::int64_t now_ms) {
  auto stored = conn.find(meta_db, mappings_collection, bson::document{}, mongo::find_options{});
  if (!stored) return stored.error();
  std::map<std::string, const bson::document*> by_name;
  for (const auto& d : *stored)
    by_name[string_field(d, "_id")] = &d;
  for (const auto& m : mappings) {
    const std::string fingerprint = m.fingerprint();
    std::int64_t since = now_ms;
    if (auto it = by_name.find(m.name); it != by_name.end()) {
      const bson::document& old = *it->second;
      // Unchanged, and not coming back from removal: it has been running all along.
      if (string_field(old, "fingerprint") == fingerprint && !bool_field(old, "removed"))
        since = date_ms(old, "activeSince");
      by_name.erase(it);
    }
    bson::document doc{{"_id", m.name},
                       {"fingerprint", fingerprint},
                       {"kind", std::string(m.kind_name())},
                       {"file", m.file},
                       {"activeSince", bson::date_time{since}},
                       {"removed", false}};
    if (auto def = definition_of(m)) doc.append("definition", std::move(*def));
    if (auto st = conn.replace_one(meta_db, mappings_collection, bson::document{{"_id", m.name}},
                                   doc, true);
        !st) {
      return st;
    }
  }
  for (const auto& [name, old] : by_name) {
    bson::document doc = *old;
    doc.set("removed", true);
    if (auto st = conn.replace_one(meta_db, mappings_collection, bson::document{{"_id", name}}, doc,
                                   true);
        !st) {
      return st;
    }
  }
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
    for (const auto& b : *backfills) {
      if (string_field(b, "_id") != v.name || string_field(b, "fingerprint") != v.fingerprint)
        continue;
      v.backfill = bool_field(b, "done") ? backfill_state::done : backfill_state::running;
      const bson::value* n = b.get("documents");
      if (n != nullptr && n->is_number())
        v.backfill_documents = static_cast<std::int64_t>(n->to_double());
    }
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
    if (v.backfill == backfill_state::running)
      out += " (" + std::to_string(v.backfill_documents) + " documents so far)";
    if (v.backfill == backfill_state::pending)
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
    if (v.backfill == backfill_state::running) d.append("backfillDocuments", v.backfill_documents);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace denormd::ops
