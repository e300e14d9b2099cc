// Runs every golden case in tests/cases/<name>/: mapping*.json, events.jsonl, optional
// options.json ({"coalesce": true, "db": "..."}), expected.json (the planned writes as
// `denormd plan` prints them, as a JSON array). DENORMD_UPDATE_GOLDEN=1 rewrites the cases
// that differ (then scripts/format-golden.py lays them out as the others).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "mapping/coalescer.h"
#include "mapping/planner.h"

namespace denormd::mapping {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(DENORMD_SOURCE_DIR) / "tests/cases")) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class planner_golden_test : public ::testing::TestWithParam<std::string> {};

TEST_P(planner_golden_test, plans_the_expected_writes) {
  const fs::path dir = fs::path(DENORMD_SOURCE_DIR) / "tests/cases" / GetParam();
  bool coalesce_ops = false;
  std::string db;
  if (fs::exists(dir / "options.json")) {
    auto opts = bson::parse_json(read_file(dir / "options.json"));
    ASSERT_TRUE(opts.has_value());
    if (const auto* c = opts->get("coalesce")) coalesce_ops = c->as<bool>();
    if (const auto* d = opts->get("db")) db = d->as_string();
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.starts_with("mapping") && name.ends_with(".json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  auto loaded = config::load_mapping_files(files, db);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().front().to_string();
  const planner p(std::move(loaded).value());

  std::vector<write_op> ops;
  std::ifstream events(dir / "events.jsonl");
  std::string line;
  while (std::getline(events, line)) {
    if (line.empty()) continue;
    auto doc = bson::parse_json(line);
    ASSERT_TRUE(doc.has_value()) << line;
    auto ev = change_event::parse(std::move(doc).value());
    ASSERT_TRUE(ev.has_value()) << ev.error().message;
    p.plan(*ev, ops);
  }
  if (coalesce_ops) ops = coalesce(std::move(ops));

  // Compared as plain JSON with key order kept: Extended JSON parsers read {"$type": "array"}
  // (which filters contain) as a legacy binary value.
  const auto want = nlohmann::ordered_json::parse(read_file(dir / "expected.json"), nullptr, false);
  ASSERT_FALSE(want.is_discarded()) << "expected.json is not JSON";
  std::string got_text;
  std::string want_text;
  for (const auto& op : ops)
    got_text += nlohmann::ordered_json::parse(to_plan_json(op)).dump() + "\n";
  for (const auto& w : want)
    want_text += w.dump() + "\n";
  if (std::getenv("DENORMD_UPDATE_GOLDEN") != nullptr && got_text != want_text) {
    // Rewrites the case; review the diff before committing it.
    std::ofstream out(dir / "expected.json");
    out << "[\n";
    for (std::size_t i = 0; i < ops.size(); ++i)
      out << to_plan_json(ops[i]) << (i + 1 < ops.size() ? ",\n" : "\n");
    out << "]\n";
    return;
  }
  EXPECT_EQ(got_text, want_text);
}

INSTANTIATE_TEST_SUITE_P(cases, planner_golden_test, ::testing::ValuesIn(case_names()),
                         [](const auto& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace denormd::mapping
