#include "ops/commands/verify_report.h"

#include "bson/json.h"
#include "ops/commands/progress_line.h"

namespace denormd::ops {

namespace {

std::string join(const std::vector<std::string>& parts, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < parts.size() && i < max; ++i)
    out += (i > 0 ? ", " : "") + parts[i];
  if (parts.size() > max) out += ", ... (" + std::to_string(parts.size()) + " paths)";
  return out;
}

}  // namespace

std::uint64_t verify_report::drifted() const {
  std::uint64_t n = 0;
  for (const auto& m : mappings)
    n += m.drifted;
  return n;
}

std::uint64_t verify_report::repaired() const {
  std::uint64_t n = 0;
  for (const auto& m : mappings)
    n += m.repaired;
  return n;
}

std::uint64_t verify_report::failing() const {
  std::uint64_t n = 0;
  for (const auto& m : mappings)
    n += m.failing;
  return n;
}

std::uint64_t verify_report::unrepaired() const {
  std::uint64_t n = 0;
  for (const auto& m : mappings)
    n += m.unrepaired;
  return n;
}

namespace {

std::string repair_summary(std::uint64_t repaired, std::uint64_t unrepaired) {
  std::string out = "repaired " + format_count(repaired);
  if (unrepaired > 0) {
    out += "; could not repair " + format_count(unrepaired) +
           " (the server refused the write; see denormd_deadletters)";
  }
  return out;
}

}  // namespace

std::string to_text(const verify_report& r) {
  std::string out;
  std::uint64_t checked = 0;
  std::size_t drifted_mappings = 0;
  for (const auto& m : r.mappings) {
    checked += m.checked;
    if (m.drifted > 0) ++drifted_mappings;
    out += m.mapping + " (" + m.kind + " " + m.source + " -> " + m.target +
           "): " + format_count(m.checked) + " checked, " +
           (m.drifted == 0 ? std::string("in line") : format_count(m.drifted) + " drifted") + "\n";
    for (const auto& e : m.examples)
      out += "  _id " + bson::to_json(e.id) + ": " + join(e.paths, 6) + "\n";
    if (m.drifted > m.examples.size()) {
      out += "  ... and " + format_count(m.drifted - m.examples.size()) + " more\n";
    }
    if (m.orphaned > 0) {
      out += "  " + format_count(m.orphaned) + " reference a source document that does not exist" +
             (m.orphans_allowed ? " (onSourceDelete \"keep\": they keep their copies; not drift)"
                                : "") +
             ", e.g.";
      for (const auto& e : m.orphan_examples)
        out += " _id " + bson::to_json(e.id) + " (" + bson::to_json(bson::value(e.keys)) + ")";
      out += "\n";
    }
    if (r.repair && m.drifted > 0) out += "  " + repair_summary(m.repaired, m.unrepaired) + "\n";
    if (m.failing > 0) {
      out += "  " + format_count(m.failing) +
             " child(ren) on which an expression fails (their values are left out of their "
             "parent's; fix the data):\n";
      for (const auto& e : m.failing_examples) {
        out += e.id.is_null()
                   ? "    the children of parent " + bson::to_json(e.parent)
                   : "    _id " + bson::to_json(e.id) + " of parent " + bson::to_json(e.parent);
        out += ": " + e.error + "\n";
      }
    }
  }
  if (!r.complete) out += "stopped before every mapping was checked\n";
  if (r.failing() > 0) {
    out += "failing: " + format_count(r.failing()) +
           " aggregate child(ren) on which an expression fails\n";
  }
  if (r.drifted() == 0) {
    out += "in line: " + format_count(checked) + " dependent(s) of " +
           std::to_string(r.mappings.size()) + " mapping(s) checked\n";
  } else {
    out += "drift: " + format_count(r.drifted()) + " dependent(s) in " +
           std::to_string(drifted_mappings) + " of " + std::to_string(r.mappings.size()) +
           " mapping(s)";
    out += r.repair ? "; " + repair_summary(r.repaired(), r.unrepaired()) + "\n"
                    : " (denormd verify --repair rewrites them)\n";
  }
  return out;
}

std::string to_json(const verify_report& r) {
  bson::array mappings;
  for (const auto& m : r.mappings) {
    bson::array examples;
    for (const auto& e : m.examples) {
      bson::array paths;
      for (const auto& p : e.paths)
        paths.push_back(p);
      examples.push_back(bson::document{{"_id", e.id}, {"paths", std::move(paths)}});
    }
    bson::array orphans;
    for (const auto& e : m.orphan_examples)
      orphans.push_back(bson::document{{"_id", e.id}, {"keys", e.keys}});
    bson::document d{{"mapping", m.mapping},
                     {"kind", m.kind},
                     {"source", m.source},
                     {"target", m.target},
                     {"checked", static_cast<std::int64_t>(m.checked)},
                     {"drifted", static_cast<std::int64_t>(m.drifted)},
                     {"examples", std::move(examples)}};
    if (m.reports_orphans) {
      d.append("orphaned", static_cast<std::int64_t>(m.orphaned));
      d.append("orphansAllowed", m.orphans_allowed);
      d.append("orphanExamples", std::move(orphans));
    }
    if (r.repair) {
      d.append("repaired", static_cast<std::int64_t>(m.repaired));
      d.append("unrepaired", static_cast<std::int64_t>(m.unrepaired));
    }
    if (m.failing > 0) {
      bson::array failing;
      for (const auto& e : m.failing_examples)
        failing.push_back(bson::document{{"parent", e.parent}, {"_id", e.id}, {"error", e.error}});
      d.append("failingChildren", static_cast<std::int64_t>(m.failing));
      d.append("failingExamples", std::move(failing));
    }
    mappings.push_back(std::move(d));
  }
  bson::document out{{"clean", r.clean()},
                     {"drifted", static_cast<std::int64_t>(r.drifted())},
                     {"failingChildren", static_cast<std::int64_t>(r.failing())},
                     {"repair", r.repair},
                     {"repaired", static_cast<std::int64_t>(r.repaired())},
                     {"complete", r.complete},
                     {"mappings", std::move(mappings)}};
  if (r.repair) out.append("unrepaired", static_cast<std::int64_t>(r.unrepaired()));
  return bson::to_json(out);
}

}  // namespace denormd::ops
