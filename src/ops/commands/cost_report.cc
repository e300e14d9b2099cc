#include "ops/commands/cost_report.h"

#include <cmath>
#include <cstdio>

#include "bson/json.h"
#include "ops/commands/progress_line.h"

namespace denormd::ops {

namespace {

// Reads per document written from which a copy is worth its writes, and below which it costs
// more than it saves; in between it depends on what the reads and writes cost.
constexpr double worth_it_reads_per_write = 10;
constexpr double break_even_reads_per_write = 1;
// A parent past this share of the 16 MiB limit with its array full is a risk of its own.
constexpr double parent_share_warning = 0.5;

std::int64_t scaled(std::int64_t n, double scale) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(n) * scale));
}

std::string count_text(std::int64_t n) {
  return format_count(static_cast<std::uint64_t>(std::max<std::int64_t>(0, n)));
}

// 0.42, 3.7, 12.5, 1,234.
std::string number_text(double v) {
  if (v >= 100) return count_text(std::llround(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 10 ? "%.1f" : "%.2g", v);
  return buf;
}

double rounded(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

std::string extent_text(const read_extent& e) {
  if (!e.sampled()) return "read all " + count_text(e.documents) + " of " + e.ns;
  return "read a sample of " + count_text(e.read) + " of the " + count_text(e.documents) + " in " +
         e.ns + ", counts scaled by " + number_text(e.scale());
}

bson::document extent_json(const read_extent& e) {
  return bson::document{{"collection", e.ns},
                        {"documents", e.documents},
                        {"read", e.read},
                        {"sampled", e.sampled()},
                        {"scale", rounded(e.scale())}};
}

std::string largest_share(const mapping_cost& c) {
  const auto& l = c.data.bytes.largest;
  if (l.empty()) return "";
  const double share =
      static_cast<double>(l.front().at_limit_bytes) / static_cast<double>(max_document_bytes);
  if (share < parent_share_warning) return "";
  return "think again: with its array full, the largest " + c.target + " document (" +
         bson::to_json(l.front().key) + ") would be " + number_text(share * 100) +
         "% of MongoDB's 16 MiB limit";
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return count_text(std::llround(bytes)) + " bytes";
  return number_text(bytes) + " " + units[u];
}

std::optional<double> data_amplification(const mapping_cost& c) {
  const auto& f = c.data.fanout;
  if (!f.error.empty()) return std::nullopt;
  if (c.kind != "copy") return 1.0;
  return f.summary.mean() * f.extent.scale();
}

std::string verdict(const mapping_cost& c) {
  if (auto risk = largest_share(c); !risk.empty()) return risk;
  if (!c.traffic || !c.traffic->reads_per_second || !c.traffic->changes_per_second) {
    return "no verdict: it needs the target's reads and the source's changes per second (" +
           (c.traffic_note.empty() ? std::string("see traffic") : c.traffic_note) + ")";
  }
  const auto& t = *c.traffic;
  const double reads = *t.reads_per_second;
  const double changes = *t.changes_per_second;
  const double amplification = t.amplification.value_or(1.0);
  const std::string window = number_text(t.window_seconds) + " s";
  if (reads == 0 && changes == 0) {
    return "no verdict: nothing read " + c.target + " or changed " + c.source + " in " + window +
           "; measure while the application runs";
  }
  if (changes == 0) {
    return "worth it so far: " + c.target + " was read " + number_text(reads) +
           " times/s and no change of " + c.source + " made a write in " + window;
  }
  const std::string writes = ", and each change writes " + number_text(amplification) +
                             " document" + (number_text(amplification) == "1" ? "" : "s");
  if (reads == 0) {
    return "think again: " + c.target + " was not read in " + window + " while " + c.source +
           " changed " + number_text(changes) + " times/s" + writes;
  }
  const double per_write = reads / (changes * std::max(amplification, 1e-9));
  const std::string word = per_write >= worth_it_reads_per_write     ? "worth it"
                           : per_write >= break_even_reads_per_write ? "borderline"
                                                                     : "think again";
  return word + ": " + c.target + " is read " + number_text(reads / changes) + "x as often as " +
         c.source + " changes" + writes + " (" + number_text(per_write) +
         " reads per document written)";
}

namespace {

std::string fanout_text(const mapping_cost& c) {
  const auto& f = c.data.fanout;
  if (!f.error.empty()) return "  fan-out: not measured: " + f.error + "\n";
  const double s = f.extent.scale();
  std::string out = "  fan-out (" + f.per + "): mean " + number_text(f.summary.mean() * s) +
                    ", p50 " + count_text(scaled(f.summary.percentile(0.5), s)) + ", p99 " +
                    count_text(scaled(f.summary.percentile(0.99), s)) + ", max " +
                    count_text(scaled(f.summary.max(), s)) + " over " +
                    count_text(f.summary.keys()) + " keys (" + extent_text(f.extent) + ")\n";
  const auto top = f.summary.top();
  if (!top.empty()) {
    out += "  most:";
    for (std::size_t i = 0; i < top.size() && i < 5; ++i) {
      out += std::string(i > 0 ? "," : "") + " " + bson::to_json(top[i].key) + " (" +
             count_text(scaled(top[i].dependents, s)) + ")";
    }
    out += "\n";
  }
  return out;
}

std::string bytes_text(const mapping_cost& c) {
  const auto& b = c.data.bytes;
  std::string out;
  if (!b.error.empty()) {
    out = "  storage: not measured: " + b.error + "\n";
  } else {
    const char* what = c.kind == "copy" ? "copy" : c.kind == "recent" ? "element" : "parent";
    out = "  storage: adds about " + format_bytes(b.added) + " to " + c.target + " (" +
          format_bytes(b.per_copy) + " per " + what + ", measured on " + count_text(b.extent.read) +
          " of " + b.extent.ns + ")\n";
  }
  for (const auto& p : b.largest) {
    out += "  largest parent " + bson::to_json(p.key) + ": " +
           format_bytes(static_cast<double>(p.bytes)) + ", " +
           format_bytes(static_cast<double>(p.at_limit_bytes)) + " with its " +
           std::to_string(b.limit) + " elements (" +
           number_text(100.0 * static_cast<double>(p.at_limit_bytes) /
                       static_cast<double>(max_document_bytes)) +
           "% of 16 MiB)\n";
  }
  if (!b.largest_error.empty()) out += "  largest parents: not measured: " + b.largest_error + "\n";
  for (const auto& n : b.notes)
    out += "  note: " + n + "\n";
  return out;
}

std::string traffic_text(const mapping_cost& c) {
  if (!c.traffic) return "  traffic: not measured: " + c.traffic_note + "\n";
  const auto& t = *c.traffic;
  std::string out = "  traffic over " + number_text(t.window_seconds) + " s:";
  std::string parts;
  if (t.changes_per_second)
    parts += " " + number_text(*t.changes_per_second) + " changes/s (" + t.changes_from + ");";
  if (t.amplification)
    parts += " " + number_text(*t.amplification) + " document" +
             (number_text(*t.amplification) == "1" ? "" : "s") + " written per change (" +
             t.amplification_from + ");";
  if (t.reads_per_second)
    parts += " " + c.target + " read " + number_text(*t.reads_per_second) + " times/s (top);";
  if (t.read_update_ratio) parts += " read/update ratio " + number_text(*t.read_update_ratio) + ";";
  if (!parts.empty()) parts.pop_back();
  out += parts + "\n";
  for (const auto& m : t.missing)
    out += "  traffic: left out: " + m + "\n";
  return out;
}

bson::document fanout_json(const fanout_figures& f) {
  if (!f.error.empty()) return bson::document{{"error", f.error}};
  const double s = f.extent.scale();
  bson::array top;
  for (const auto& k : f.summary.top())
    top.push_back(bson::document{{"key", k.key}, {"dependents", scaled(k.dependents, s)}});
  return bson::document{{"per", f.per},
                        {"keys", f.summary.keys()},
                        {"dependents", scaled(f.summary.dependents(), s)},
                        {"mean", rounded(f.summary.mean() * s)},
                        {"p50", scaled(f.summary.percentile(0.5), s)},
                        {"p99", scaled(f.summary.percentile(0.99), s)},
                        {"max", scaled(f.summary.max(), s)},
                        {"top", std::move(top)},
                        {"read", extent_json(f.extent)}};
}

bson::document bytes_json(const bytes_figures& b) {
  bson::document out;
  if (!b.error.empty()) {
    out.append("error", b.error);
  } else {
    out.append("perCopy", rounded(b.per_copy));
    out.append("read", extent_json(b.extent));
  }
  bson::array largest;
  for (const auto& p : b.largest) {
    largest.push_back(
        bson::document{{"key", p.key},
                       {"bytes", p.bytes},
                       {"atLimitBytes", p.at_limit_bytes},
                       {"shareOfLimit", std::round(1e6 * static_cast<double>(p.at_limit_bytes) /
                                                   static_cast<double>(max_document_bytes)) /
                                            1e6}});
  }
  if (!largest.empty()) out.append("largestParents", std::move(largest));
  if (!b.largest_error.empty()) out.append("largestParentsError", b.largest_error);
  bson::array notes;
  for (const auto& n : b.notes)
    notes.push_back(n);
  if (!notes.empty()) out.append("notes", std::move(notes));
  return out;
}

bson::document traffic_json(const traffic_figures& t) {
  bson::document out{{"windowSeconds", rounded(t.window_seconds)}};
  if (t.changes_per_second) {
    out.append("changesPerSecond", rounded(*t.changes_per_second));
    out.append("changesFrom", t.changes_from);
  }
  if (t.amplification) {
    out.append("writeAmplification", rounded(*t.amplification));
    out.append("amplificationFrom", t.amplification_from);
  }
  if (t.reads_per_second) out.append("targetReadsPerSecond", rounded(*t.reads_per_second));
  if (t.read_update_ratio) out.append("readUpdateRatio", rounded(*t.read_update_ratio));
  bson::array missing;
  for (const auto& m : t.missing)
    missing.push_back(m);
  if (!missing.empty()) out.append("missing", std::move(missing));
  return out;
}

}  // namespace

std::string to_text(const cost_report& r) {
  std::string out;
  for (const auto& c : r.mappings) {
    out += c.mapping + " (" + c.kind + ", " + c.source + " -> " + c.target + ")\n";
    out += fanout_text(c) + bytes_text(c) + traffic_text(c);
    out += "  verdict: " + c.verdict + "\n";
  }
  return out;
}

std::string to_json(const cost_report& r) {
  bson::array mappings;
  for (const auto& c : r.mappings) {
    bson::document d{{"mapping", c.mapping},
                     {"kind", c.kind},
                     {"source", c.source},
                     {"target", c.target},
                     {"fanOut", fanout_json(c.data.fanout)}};
    if (c.data.bytes.error.empty())
      d.append("addedBytes", static_cast<std::int64_t>(std::llround(c.data.bytes.added)));
    d.append("bytes", bytes_json(c.data.bytes));
    if (c.traffic) {
      d.append("traffic", traffic_json(*c.traffic));
    } else {
      d.append("traffic", bson::document{{"error", c.traffic_note}});
    }
    d.append("verdict", c.verdict);
    mappings.push_back(std::move(d));
  }
  return bson::to_json(bson::document{{"mappings", std::move(mappings)},
                                      {"maxTimeSeconds", r.bounds.max_time_ms / 1000},
                                      {"sampleSize", r.bounds.sample_size}});
}

}  // namespace denormd::ops
