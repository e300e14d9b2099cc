// Randomized robustness: malformed mapping files and malformed change events must give a
// clean error (or a valid result), never a crash. Deterministic seeds; run under the
// sanitizer build to catch memory errors too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

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

// Byte-level damage: flips, deletions, duplications, insertions of JSON-ish tokens.
std::string mutate(std::string s, std::mt19937& rng) {
  static const char* tokens[] = {
      "{",       "}",    "[",  "]",     ",",       ":",          "\"",
      "null",    "true", "-1", "1e999", "\"$gt\"", "\"$where\"", "{\"$oid\":\"zz\"}",
      "\\u0000", "\xff"};
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    const std::size_t pos = rng() % s.size();
    switch (rng() % 5) {
      case 0:
        s[pos] = static_cast<char>(rng() % 256);
        break;
      case 1:
        s.erase(pos, 1 + rng() % 8);
        break;
      case 2:
        s.insert(pos, s.substr(pos, 1 + rng() % 16));
        break;
      case 3:
        s.insert(pos, tokens[rng() % std::size(tokens)]);
        break;
      case 4:
        s.resize(pos);
        break;
    }
  }
  return s;
}

// Structure-level damage: replaces one value anywhere in the document with a random one.
void replace_random_value(bson::document& d, std::mt19937& rng) {
  if (d.empty()) return;
  auto& f = d.fields()[rng() % d.size()];
  if (f.val.is_document() && rng() % 2 == 0) {
    replace_random_value(f.val.as_document(), rng);
    return;
  }
  const bson::value choices[] = {bson::value(),
                                 bson::value(42),
                                 bson::value("x"),
                                 bson::value(bson::array{}),
                                 bson::value(bson::document{}),
                                 bson::value(bson::document{{"$gt", 1}}),
                                 bson::value(true),
                                 bson::value(-1.5)};
  f.val = choices[rng() % std::size(choices)];
}

TEST(robustness_test, damaged_mapping_files_give_clean_errors) {
  const fs::path dir = fs::path(DENORMD_SOURCE_DIR) / "mappings";
  std::mt19937 rng(20261121);
  int rejected = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string text = read_file(entry.path());
    for (int i = 0; i < 400; ++i) {
      auto r = config::parse_mapping("fuzz.json", mutate(text, rng), "shop");
      if (r) continue;
      ++rejected;
      for (const auto& e : r.error()) {
        EXPECT_EQ(e.file, "fuzz.json");
        EXPECT_FALSE(e.message.empty());
      }
    }
    auto doc = bson::parse_json(text);
    ASSERT_TRUE(doc.has_value());
    for (int i = 0; i < 400; ++i) {
      bson::document d = *doc;
      replace_random_value(d, rng);
      replace_random_value(d, rng);
      auto r = config::parse_mapping("fuzz.json", bson::to_json(d), "shop");
      if (!r) ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);  // the damage really is damage
}

TEST(robustness_test, damaged_events_never_crash_the_planner) {
  auto loaded = config::load_mappings(fs::path(DENORMD_SOURCE_DIR) / "mappings", "");
  ASSERT_TRUE(loaded.has_value());
  const planner p(std::move(loaded).value());
  std::vector<std::string> samples;
  for (const auto& entry : fs::directory_iterator(fs::path(DENORMD_SOURCE_DIR) / "tests/cases")) {
    std::ifstream in(entry.path() / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) samples.push_back(line);
    }
  }
  ASSERT_FALSE(samples.empty());
  std::mt19937 rng(7);
  int planned = 0;
  int rejected = 0;
  std::vector<write_op> ops;
  for (int i = 0; i < 6000; ++i) {
    const std::string& base = samples[rng() % samples.size()];
    auto doc = bson::parse_json(i % 2 == 0 ? mutate(base, rng) : base);
    if (!doc) {
      ++rejected;
      continue;
    }
    if (i % 2 == 1) {
      replace_random_value(*doc, rng);
      replace_random_value(*doc, rng);
    }
    // Point the event at a sample source so the planner really runs.
    if (auto* n = doc->get("ns"); n != nullptr && n->is_document() && rng() % 2 == 0) {
      static const char* colls[] = {"customers", "products", "hosts",
                                    "reviews",   "logmsgs",  "orders"};
      n->as_document().set("db", "shop");
      n->as_document().set("coll", colls[rng() % std::size(colls)]);
    }
    auto ev = change_event::parse(std::move(doc).value());
    if (!ev) {
      ++rejected;
      EXPECT_FALSE(ev.error().message.empty());
      continue;
    }
    p.plan(*ev, ops);
    ++planned;
    if (ops.size() > 64) {
      const auto merged = coalesce(std::move(ops));
      EXPECT_LE(merged.size(), 2 * 65u);  // a merge may add one $pull per parent, never more
      ops.clear();
    }
  }
  EXPECT_GT(planned, 800);
  EXPECT_GT(rejected, 500);
}

}  // namespace
}  // namespace denormd::mapping
