#include "app/describe.h"

#include <algorithm>

#include "bson/json.h"

namespace denormd::app {

namespace {

std::string join_sources(const mapping::mapping& m) {
  // Each path once; an aggregate's $count reads no path.
  std::vector<std::string_view> seen;
  std::string s;
  for (const auto& f : m.fields) {
    if (f.source_path.empty() || std::find(seen.begin(), seen.end(), f.source_path) != seen.end()) {
      continue;
    }
    seen.push_back(f.source_path);
    s += (s.empty() ? "" : ", ") + f.source_path;
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
