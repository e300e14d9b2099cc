#include "ops/commands/status_probe.h"

#include <cmath>
#include <cstdio>

#include "lease/lease_store.h"

#include "bson/json.h"
#include "checkpoint/checkpoint_store.h"
#include "common/clock.h"
#include "common/json_text.h"
#include "ops/commands/oplog_window.h"
#include "ops/commands/progress_line.h"

namespace denormd::ops {

namespace {

std::string_view history_name(history_state h) {
  switch (h) {
    case history_state::reachable:
      return "reachable";
    case history_state::lost:
      return "lost";
    case history_state::unknown:
      return "unknown";
    case history_state::no_checkpoint:
      return "no checkpoint";
  }
  return "?";
}

// A lag or an age: to the hundredth under ten seconds, where whole seconds would say 0.
std::string short_duration(double seconds) {
  if (seconds >= 10) return format_duration(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%.2fs", std::max(0.0, seconds));
  return text;
}

double age_seconds(std::int64_t now_ms, std::int64_t then_ms) {
  return static_cast<double>(std::max<std::int64_t>(0, now_ms - then_ms)) / 1000.0;
}

}  // namespace

std::optional<bson::timestamp> token_cluster_time(const bson::document& token) {
  const bson::value* data = token.get("_data");
  if (data == nullptr || !data->is_string()) return std::nullopt;
  const std::string& hex = data->as_string();
  // Longer than the type byte and the timestamp: a token has more after them.
  if (hex.size() <= 18 || hex_digit(hex[0]) != 8 || hex_digit(hex[1]) != 2) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = 2; i < 18; ++i) {
    const int d = hex_digit(hex[i]);
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return bson::timestamp{static_cast<std::uint32_t>(v >> 32), static_cast<std::uint32_t>(v)};
}

status_probe::status_probe(mongo::connection& conn, std::string meta_db)
    : conn_(conn), meta_db_(std::move(meta_db)) {}

mongo::result<std::vector<source_status>> status_probe::run(
    const std::vector<mapping::ns>& sources) {
  checkpoint::checkpoint_store store(conn_, meta_db_);
  lease::lease_store leases(conn_, meta_db_, 0);
  auto table = leases.table();
  if (!table) return table.error();
  auto rows = leases.instances();
  if (!rows) return rows.error();
  instances_ = std::move(*rows);
  // Read once, when some source has a checkpoint to measure.
  std::optional<mongo::result<std::optional<bson::timestamp>>> oldest;
  std::vector<source_status> out;
  for (const auto& ns : sources) {
    source_status s;
    s.source = ns;
    for (const auto& e : *table) {
      if (e.row.unit == ns.unit())
        s.lease = lease_status{e.row.owner, e.row.epoch, e.expires_ms, e.row.expired};
    }
    if (s.lease && !s.lease->owner.empty() && !s.lease->expired) {
      const lease::instance_row* from = nullptr;
      if (const auto* r = lease::report_of(instances_, ns.unit(), s.lease->owner, &from)) {
        s.report = *r;
        s.reported_by = from->name;
        s.report_age_ms = from->age_ms;
      }
    }
    auto fence = store.fence_of(ns);
    if (!fence) return fence.error();
    s.fence = *fence;
    auto cp = store.load(ns);
    if (!cp) return cp.error();
    if (*cp) {
      s.has_checkpoint = true;
      s.token = (*cp)->token;
      s.cluster_time = token_cluster_time(s.token);
      s.event_ms = (*cp)->event_ms;
      s.saved_ms = (*cp)->saved_ms;
      if ((*cp)->stopped) s.stopped = *(*cp)->stopped;
      test_history(s);
      // Lost history has no headroom left, whatever the times say (the server may have
      // dropped entries younger than the oldest one it reports, or the checkpoint's time may
      // be older than the token's).
      if (s.history == history_state::lost) s.headroom_passed = true;
      if (!oldest) oldest = oldest_oplog_entry(conn_);
      const auto position = (*cp)->event_time ? (*cp)->event_time : s.cluster_time;
      if (!*oldest) {
        s.headroom_detail = oplog_read_problem(oldest->error());
      } else if (!**oldest) {
        s.headroom_detail = "the server keeps no oplog entry";
      } else if (!position) {
        s.headroom_detail = "the checkpoint's cluster time is unknown";
      } else {
        s.headroom_seconds = headroom_seconds(*position, ***oldest);
        s.headroom_passed = ***oldest > *position;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

void status_probe::test_history(source_status& s) {
  mongo::watch_options w;
  w.resume_after = s.token;
  w.update_lookup = false;
  w.max_await_ms = 50;
  w.batch_size = 1;
  auto classify = [&](const mongo::driver_error& e) {
    s.history = e.history_lost() ? history_state::lost : history_state::unknown;
    s.detail = e.to_string();
  };
  auto stream = conn_.watch(s.source.db, s.source.coll, w);
  if (!stream) return classify(stream.error());
  // Some servers answer the resume only on the first getMore.
  auto next = (*stream)->next();
  if (!next) return classify(next.error());
  s.history = history_state::reachable;
}

namespace {

// The lease, fence and (with --ha) the holder's report of one source, one line each.
std::string lease_lines(const source_status& s, std::int64_t now_ms) {
  std::string out;
  if (s.lease) {
    out = "  lease: ";
    if (s.lease->owner.empty()) {
      out += "released, nobody streams it";
    } else if (s.lease->expired) {
      out += "expired " + format_duration(age_seconds(now_ms, s.lease->expires_ms)) +
             " ago (last held by " + s.lease->owner + "), nobody streams it";
    } else {
      out += "held by " + s.lease->owner + ", expires " + iso8601(s.lease->expires_ms);
    }
    out += " (epoch " + std::to_string(s.lease->epoch) + ")\n";
  }
  if (s.fence && !s.fence->writer_process.empty()) {
    out += "  writer: " + s.fence->writer_process + " (fence epoch " +
           std::to_string(s.fence->epoch) + ")\n";
  }
  if (s.report) {
    const auto& r = *s.report;
    out += "  stream: " + (r.streaming ? std::string("streaming") : r.state) + ", lag " +
           short_duration(r.lag_seconds) + ", " +
           format_count(static_cast<std::uint64_t>(std::llround(r.events_per_second))) +
           " events/s, " + std::to_string(r.errors) + " error(s) (as " + s.reported_by +
           " reported " + short_duration(static_cast<double>(s.report_age_ms) / 1000.0) + " ago)\n";
  }
  return out;
}

std::string history_line(const source_status& s) {
  switch (s.history) {
    case history_state::reachable:
      return "reaches back to the checkpoint (denormd run resumes from it)";
    case history_state::lost:
      return "LOST: the server no longer keeps changes that old; denormd run must re-sync (" +
             s.detail + ")";
    default:
      return "unknown: " + s.detail;
  }
}

// Lost history has no headroom, whatever the times say; the times are still shown when known.
std::string headroom_line(const source_status& s) {
  const std::string passed = s.headroom_seconds && s.headroom_passed
                                 ? "the oldest entry the server keeps is " +
                                       format_duration(-*s.headroom_seconds) +
                                       " past the checkpoint"
                                 : std::string();
  if (s.history == history_state::lost) {
    return "none: history lost" + (passed.empty() ? std::string() : " (" + passed + ")");
  }
  if (!s.headroom_seconds) return "unknown: " + s.headroom_detail;
  if (!s.headroom_passed) {
    return format_duration(*s.headroom_seconds) +
           " (until the oldest entry the server keeps passes the checkpoint)";
  }
  return "none: " + passed;
}

std::string instances_text(const std::vector<lease::instance_row>& instances) {
  std::string out;
  for (const auto& i : instances) {
    if (!i.live) continue;
    if (out.empty()) out += "instances:\n";
    std::string holds;
    for (const auto& u : i.holds)
      holds += (holds.empty() ? "" : ", ") + u;
    out += "  " + i.name + ": live, seen " +
           short_duration(static_cast<double>(i.age_ms) / 1000.0) + " ago, holds " +
           (holds.empty() ? std::string("nothing") : holds) + "\n";
  }
  return out;
}

}  // namespace

std::string to_text(const std::vector<source_status>& all, std::int64_t now_ms,
                    const std::vector<lease::instance_row>& instances) {
  std::string out;
  for (const auto& s : all) {
    out += s.source.unit() + ":";
    const std::string lease_line = lease_lines(s, now_ms);
    if (!s.has_checkpoint) {
      out += " no checkpoint (denormd run starts this source at the current time)\n" + lease_line;
      continue;
    }
    out += " checkpoint saved " + iso8601(s.saved_ms) + " (" +
           format_duration(age_seconds(now_ms, s.saved_ms)) + " ago)";
    if (s.event_ms > 0) {
      out += ", last event " + iso8601(s.event_ms) + " (" +
             format_duration(age_seconds(now_ms, s.event_ms)) + " ago)";
    }
    if (s.cluster_time) {
      out += ", cluster time " + std::to_string(s.cluster_time->t) + ":" +
             std::to_string(s.cluster_time->i);
    }
    out += "\n  token " + bson::to_json(s.token) + "\n";
    for (const auto& e : s.stopped) {
      out += "  removed mapping " + e.mapping + " (fingerprint " + e.fingerprint +
             ") stopped after token " + bson::to_json(e.token) + "\n";
    }
    out += "  history: " + history_line(s) + "\n  history headroom " + headroom_line(s) + "\n" +
           lease_line;
  }
  return out + instances_text(instances);
}

bson::document to_document(const std::vector<source_status>& all, std::int64_t now_ms) {
  bson::array sources;
  for (const auto& s : all) {
    bson::document d{{"source", s.source.unit()}, {"checkpoint", s.has_checkpoint}};
    if (s.has_checkpoint) {
      d.append("token", s.token);
      d.append("clusterTime", s.cluster_time
                                  ? bson::value(bson::document{
                                        {"t", static_cast<std::int64_t>(s.cluster_time->t)},
                                        {"i", static_cast<std::int64_t>(s.cluster_time->i)}})
                                  : bson::value());
      d.append("wallTime", s.event_ms > 0 ? bson::value(iso8601(s.event_ms)) : bson::value());
      d.append("savedAt", iso8601(s.saved_ms));
      d.append("ageSeconds", age_seconds(now_ms, s.saved_ms));
      if (!s.stopped.empty()) {
        bson::array stopped;
        for (const auto& e : s.stopped)
          stopped.push_back(bson::document{
              {"mapping", e.mapping}, {"fingerprint", e.fingerprint}, {"token", e.token}});
        d.append("stoppedMappings", std::move(stopped));
      }
    }
    d.append("history", std::string(history_name(s.history)));
    if (!s.detail.empty()) d.append("detail", s.detail);
    if (s.has_checkpoint) {
      d.append("headroomSeconds",
               s.headroom_seconds ? bson::value(*s.headroom_seconds) : bson::value());
      if (!s.headroom_detail.empty()) d.append("headroomDetail", s.headroom_detail);
    }
    if (s.fence) {
      d.append("writer",
               bson::document{{"process", s.fence->writer_process}, {"epoch", s.fence->epoch}});
    }
    if (s.lease) {
      d.append("lease", bson::document{{"owner", s.lease->owner},
                                       {"epoch", s.lease->epoch},
                                       {"expiresAt", iso8601(s.lease->expires_ms)},
                                       {"expired", s.lease->expired}});
    }
    if (s.report) {
      const auto& r = *s.report;
      d.append("stream",
               bson::document{{"streaming", r.streaming},
                              {"state", r.state},
                              {"lagSeconds", r.lag_seconds},
                              {"eventsPerSecond", r.events_per_second},
                              {"errors", r.errors},
                              {"reportedBy", s.reported_by},
                              {"reportAgeSeconds", static_cast<double>(s.report_age_ms) / 1000.0}});
    }
    sources.push_back(std::move(d));
  }
  return bson::document{{"sources", std::move(sources)}};
}

bson::array to_bson_array(const std::vector<lease::instance_row>& instances) {
  bson::array out;
  for (const auto& i : instances) {
    if (!i.live) continue;
    out.push_back(bson::document{{"instance", i.name},
                                 {"seenSecondsAgo", static_cast<double>(i.age_ms) / 1000.0},
                                 {"holds", bson::array(i.holds.begin(), i.holds.end())}});
  }
  return out;
}

std::string to_json(const std::vector<source_status>& all, std::int64_t now_ms) {
  return bson::to_json(to_document(all, now_ms));
}

}  // namespace denormd::ops
