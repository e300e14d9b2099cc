#include "ops/commands/traffic_sampler.h"

#include <cstdlib>
#include <utility>

#include "common/clock.h"

namespace denormd::ops {

namespace {

// One `name{labels} value` line; false when it is not one.
bool parse_sample(std::string_view line, metric_sample& out) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t')
    ++i;
  out.name = std::string(line.substr(0, i));
  if (out.name.empty()) return false;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const std::size_t eq = line.find('=', i);
      if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
        return false;
      std::string name(line.substr(i, eq - i));
      std::string value;
      std::size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          ++j;
          value += line[j] == 'n' ? '\n' : line[j];
        } else {
          value += line[j];
        }
      }
      if (j >= line.size()) return false;
      out.labels.emplace(std::move(name), std::move(value));
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    ++i;
  }
  const std::string rest(line.substr(i));
  char* end = nullptr;
  out.value = std::strtod(rest.c_str(), &end);
  return end != rest.c_str();
}

std::int64_t count_of(const bson::document& entry, std::string_view what) {
  const bson::value* v = entry.get(what);
  if (v == nullptr || !v->is_document()) return 0;
  const bson::value* count = v->as_document().get("count");
  return count != nullptr && count->is_number() ? static_cast<std::int64_t>(count->to_double()) : 0;
}

double per_second(double delta, double seconds) {
  return seconds > 0 ? delta / seconds : 0;
}

// Changes and dependents written per change, from denormd's metrics; false (and why in
// `t.missing`) when they do not say.
bool from_metrics(const mapping::mapping& m, const traffic_reading& before,
                  const traffic_reading& after, traffic_figures& t) {
  if (!before.fanout || !after.fanout) {
    if (!after.metrics_error.empty()) t.missing.push_back(after.metrics_error);
    return false;
  }
  const auto b = before.fanout->find(m.name);
  const auto a = after.fanout->find(m.name);
  if (b == before.fanout->end() || a == after.fanout->end()) {
    t.missing.push_back("the denormd asked has no denormd_fanout series of " + m.name +
                        " (it does not run the mapping, or predates the metric)");
    return false;
  }
  const double changes = a->second.count - b->second.count;
  const double written = a->second.sum - b->second.sum;
  if (changes < 0 || written < 0) {
    t.missing.push_back("denormd restarted during the window");
    return false;
  }
  t.changes_per_second = per_second(changes, t.window_seconds);
  t.changes_from = "denormd: changes that made writes for the mapping";
  if (changes > 0) {
    t.amplification = written / changes;
    t.amplification_from = "denormd, during the window";
  } else if (a->second.count > 0) {
    t.amplification = a->second.sum / a->second.count;
    t.amplification_from = "denormd, since it started";
  }
  return true;
}

}  // namespace

expected<std::vector<metric_sample>> parse_prometheus_text(std::string_view text) {
  std::vector<metric_sample> out;
  std::size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    metric_sample s;
    if (!parse_sample(line, s))
      return fail("line " + std::to_string(number) + " is not a Prometheus sample");
    out.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, fanout_totals> fanout_by_mapping(const std::vector<metric_sample>& samples) {
  std::map<std::string, fanout_totals> out;
  for (const auto& s : samples) {
    const auto mapping = s.labels.find("mapping");
    if (mapping == s.labels.end()) continue;
    if (s.name == "denormd_fanout_sum") out[mapping->second].sum = s.value;
    if (s.name == "denormd_fanout_count") out[mapping->second].count = s.value;
  }
  return out;
}

std::map<std::string, top_counts> parse_top(const bson::document& reply) {
  std::map<std::string, top_counts> out;
  const bson::value* totals = reply.get("totals");
  if (totals == nullptr || !totals->is_document()) return out;
  for (const auto& f : totals->as_document()) {
    if (!f.val.is_document()) continue;  // "note"
    const auto& e = f.val.as_document();
    out[f.name] = top_counts{count_of(e, "queries"), count_of(e, "getmore"), count_of(e, "insert"),
                             count_of(e, "update"), count_of(e, "remove")};
  }
  return out;
}

traffic_figures traffic_of(const mapping::mapping& m, const traffic_reading& before,
                           const traffic_reading& after, std::optional<double> data_amplification) {
  traffic_figures t;
  t.window_seconds = static_cast<double>(after.at_ms - before.at_ms) / 1000.0;
  const bool metrics = from_metrics(m, before, after, t);
  if (before.top && after.top) {
    const auto target_before = before.top->find(m.target.full());
    const auto target_after = after.top->find(m.target.full());
    const top_counts none;
    const auto& tb = target_before == before.top->end() ? none : target_before->second;
    const auto& ta = target_after == after.top->end() ? none : target_after->second;
    t.reads_per_second = per_second(static_cast<double>(ta.queries - tb.queries), t.window_seconds);
    if (!metrics) {
      const auto sb = before.top->find(m.source.full());
      const auto sa = after.top->find(m.source.full());
      const auto& b = sb == before.top->end() ? none : sb->second;
      const auto& a = sa == after.top->end() ? none : sa->second;
      t.changes_per_second = per_second(
          static_cast<double>((a.insert + a.update + a.remove) - (b.insert + b.update + b.remove)),
          t.window_seconds);
      t.changes_from = "top: every write to " + m.source.full() + ", mapped fields or not";
    }
  } else {
    t.missing.push_back(after.top_error.empty() ? before.top_error : after.top_error);
  }
  if (!t.amplification && data_amplification) {
    t.amplification = data_amplification;
    t.amplification_from = "the data";
  }
  if (t.reads_per_second && t.changes_per_second && *t.changes_per_second > 0)
    t.read_update_ratio = *t.reads_per_second / *t.changes_per_second;
  return t;
}

traffic_sampler::traffic_sampler(mongo::connection& conn, metrics_fetch fetch)
    : conn_(conn), fetch_(std::move(fetch)) {}

traffic_reading traffic_sampler::read() {
  traffic_reading r;
  r.at_ms = steady_ms();
  if (fetch_) {
    auto text = fetch_();
    if (!text) {
      r.metrics_error = "denormd's metrics: " + text.error().message;
    } else if (auto samples = parse_prometheus_text(*text); !samples) {
      r.metrics_error = "denormd's metrics: " + samples.error().message;
    } else {
      r.fanout = fanout_by_mapping(*samples);
    }
  }
  auto top = conn_.command("admin", bson::document{{"top", 1}});
  if (!top) {
    r.top_error = "target reads: the server refused top: " + top.error().to_string();
  } else {
    r.top = parse_top(*top);
  }
  return r;
}

}  // namespace denormd::ops
