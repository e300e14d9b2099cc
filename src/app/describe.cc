#include "app/describe.h"

#include <algorithm>

#include "bson/json.h"
#include "mapping/computed_expression.h"

namespace denormd::app {

namespace {

std::string join_sources(const mapping::mapping& m) {
  // Each path once; an aggregate's $count reads no path.
  std::vector<std::string_view> seen;
  std::string s;
  auto add = [&](std::string_view path) {
    if (path.empty() || std::find(seen.begin(), seen.end(), path) != seen.end()) return;
    seen.push_back(path);
    s += (s.empty() ? "" : ", ") + std::string(path);
  };
  for (const auto& f : m.fields) {
    if (!f.computed) {
      add(f.source_path);
    } else if (f.computed->reads_whole_document()) {
      add("the whole document");
    } else {
      for (const auto& p : f.computed->reads())
        add(p);
    }
  }
  return s;
}

// One line per computed field: its expression and the paths it reads (what makes an update
// rewrite it).
std::string computed_lines(const mapping::mapping& m) {
  std::string s;
  for (const auto& f : m.fields) {
    if (!f.computed) continue;
    std::string reads;
    for (const auto& p : f.computed->reads())
      reads += (reads.empty() ? "" : ", ") + p;
    if (f.computed->reads_whole_document()) reads = "the whole document ($$ROOT)";
    if (reads.empty()) reads = "no field (a constant)";
    s += "  computed " + f.name + " = " + f.computed->canonical_text() + "\n";
    s += "    reads " + reads + "; evaluated by the server\n";
  }
  return s;
}

}  // namespace

std::vector<mapping::index_need> indexes_needed(const mapping::mapping& m) {
  std::vector<mapping::index_need> out;
  m.visit([&](const auto& k) { k.indexes(m, out); });
  return out;
}

std::string describe_mapping(const mapping::mapping& m) {
  std::string s = m.name + " (" + std::string(m.kind_name()) + ", " + m.file + ")\n";
  if (!m.description.empty()) s += "  " + m.description + "\n";
  s += "  reads " + m.source.full() + " (" + join_sources(m) + ")\n";
  s += computed_lines(m);
  m.visit([&](const auto& k) { k.describe(m, s); });
  for (const auto& ix : indexes_needed(m)) {
    s += "  index " + ix.where.full() + " " + ix.keys + "  (" + ix.why + ")\n";
  }
  return s;
}

std::vector<std::string> mapping_warnings(const mapping::mapping& m) {
  std::vector<std::string> out;
  m.visit([&](const auto& k) { k.warnings(m, out); });
  return out;
}

}  // namespace denormd::app
