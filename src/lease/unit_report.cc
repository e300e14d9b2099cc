#include "lease/unit_report.h"

namespace denormd::lease {

namespace {

double number_or(const bson::document& d, std::string_view key, double fallback) {
  const bson::value* v = d.get(key);
  return v != nullptr && v->is_number() ? v->to_double() : fallback;
}

std::string string_or(const bson::document& d, std::string_view key) {
  const bson::value* v = d.get(key);
  return v != nullptr && v->is_string() ? v->as_string() : std::string();
}

unit_report unit_of(const bson::document& d) {
  unit_report u;
  u.unit = string_or(d, "unit");
  if (const bson::value* v = d.get("streaming"); v != nullptr && v->is<bool>())
    u.streaming = v->as<bool>();
  u.state = string_or(d, "state");
  u.lag_seconds = number_or(d, "lagSeconds", 0);
  u.checkpoint_age_seconds = number_or(d, "checkpointAgeSeconds", 0);
  u.applied_events = static_cast<std::int64_t>(number_or(d, "appliedEvents", 0));
  if (const bson::value* v = d.get("appliedThrough"); v != nullptr && v->is<bson::timestamp>())
    u.applied_through = v->as<bson::timestamp>();
  u.events_per_second = number_or(d, "eventsPerSecond", 0);
  u.last_event_ms = static_cast<std::int64_t>(number_or(d, "lastEventMs", 0));
  u.errors = static_cast<std::int64_t>(number_or(d, "errors", 0));
  if (const bson::value* v = d.get("lag"); v != nullptr && v->is_array()) {
    for (const auto& s : v->as_array()) {
      if (!s.is_array() || s.as_array().size() != 2) continue;
      const auto& pair = s.as_array();
      if (pair[0].is_number() && pair[1].is_number())
        u.lag.emplace_back(static_cast<std::int64_t>(pair[0].to_double()), pair[1].to_double());
    }
  }
  return u;
}

}  // namespace

bson::document to_document(const instance_report& r) {
  bson::array units;
  for (const auto& u : r.units) {
    bson::document d{{"unit", u.unit},
                     {"streaming", u.streaming},
                     {"state", u.state},
                     {"lagSeconds", u.lag_seconds},
                     {"checkpointAgeSeconds", u.checkpoint_age_seconds},
                     {"appliedEvents", u.applied_events},
                     {"eventsPerSecond", u.events_per_second},
                     {"lastEventMs", u.last_event_ms},
                     {"errors", u.errors}};
    if (u.applied_through) d.append("appliedThrough", *u.applied_through);
    bson::array lag;
    for (const auto& [at, seconds] : u.lag)
      lag.push_back(bson::array{at, seconds});
    d.append("lag", std::move(lag));
    units.push_back(std::move(d));
  }
  return bson::document{
      {"version", r.version}, {"startedMs", r.started_ms}, {"units", std::move(units)}};
}

instance_report instance_report_of(const bson::document& d) {
  instance_report r;
  r.version = string_or(d, "version");
  r.started_ms = static_cast<std::int64_t>(number_or(d, "startedMs", 0));
  if (const bson::value* v = d.get("units"); v != nullptr && v->is_array()) {
    for (const auto& u : v->as_array()) {
      if (u.is_document()) r.units.push_back(unit_of(u.as_document()));
    }
  }
  return r;
}

const unit_report* report_of(const std::vector<instance_row>& rows, const std::string& unit,
                             const std::string& holder, const instance_row** from) {
  for (const auto& row : rows) {
    if (!row.live || !row.report || (!holder.empty() && row.name != holder)) continue;
    for (const auto& u : row.report->units) {
      if (u.unit != unit) continue;
      if (from != nullptr) *from = &row;
      return &u;
    }
  }
  return nullptr;
}

}  // namespace denormd::lease
