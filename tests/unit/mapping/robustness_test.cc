// Randomized robustness: malformed mapping files and malformed change events must give a
// clean error (or a valid result), never a crash. Deterministic seeds; run under the
// sanitizer build to catch memory errors too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

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

// A document nested `levels` deep: {"d": {"d": ... {"x": 1}}}.
bson::value deep_document(int levels) {
  bson::document d{{"x", 1}};
  for (int i = 1; i < levels; ++i)
    d = bson::document{{"d", bson::value(std::move(d))}};
  return bson::value(std::move(d));
}

// Values a hostile or careless writer can put where a key is expected: query-operator
// objects, arrays (MongoDB equality matches elements), regexes, undefined, huge strings,
// deep documents, and the plain values a reference usually holds.
bson::value hostile_value(std::mt19937& rng) {
  switch (rng() % 14) {
    case 0:
      return bson::value(bson::document{{"$gt", -1}});
    case 1:
      return bson::value(bson::document{{"$ne", bson::value()}});
    case 2:
      return bson::value(bson::document{{"$exists", true}, {"x", 1}});
    case 3:
      return bson::value(bson::document{{"$where", "sleep(1000)"}});
    case 4:
      return bson::value(bson::array{bson::value(1), bson::value(2)});
    case 5:
      return bson::value(bson::array{bson::value(bson::document{{"$gt", 0}})});
    case 6:
      return bson::value(bson::array{});
    case 7:
      return bson::value(bson::regex{".*", "i"});
    case 8:
      return bson::value(bson::undefined_t{});
    case 9:
      return bson::value(std::string(1 + rng() % (1 << 20), static_cast<char>('a' + rng() % 26)));
    case 10:
      return deep_document(1 + static_cast<int>(rng() % 190));  // from_bson allows 200
    case 11:
      return bson::value(bson::document{{"$oid", "65f000000000000000000001"}});
    case 12:
      return bson::value(bson::document{});
    default:
      return bson::value(static_cast<std::int32_t>(rng() % 10));
  }
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
  f.val = rng() % 4 == 0 ? hostile_value(rng) : choices[rng() % std::size(choices)];
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

// `{"$and":[ ... ]}` around `inner`, `levels` times.
std::string wrap_in_and(const std::string& inner, int levels) {
  std::string s;
  s.reserve(inner.size() + 11 * static_cast<std::size_t>(levels));
  for (int i = 0; i < levels; ++i)
    s += R"({"$and":[)";
  s += inner;
  for (int i = 0; i < levels; ++i)
    s += "]}";
  return s;
}

// Shape-level damage to a mapping file: deep nesting, very long names, keys and strings, and
// many fields, in the places the loader reads them.
std::string hostile_mapping(std::mt19937& rng) {
  const auto big = [&](std::size_t max) { return std::string(1 + rng() % max, 'n'); };
  std::string name = "m";
  std::string where = R"({"status":"PAID"})";
  std::string fields = R"({"n":"n")";
  std::string extra;
  switch (rng() % 7) {
    case 0:
      name = big(60000);
      break;
    case 1:
      where = wrap_in_and(where, static_cast<int>(rng() % 20000));
      break;
    case 2:
      extra = R"(,"description":)" + std::string(rng() % 50000, '[');
      break;
    case 3:
      fields += ",\"" + big(60000) + "\":\"" + big(60000) + "\"";
      break;
    case 4:
      for (int i = 0, n = static_cast<int>(rng() % 30000); i < n; ++i)
        fields += ",\"f" + std::to_string(i) + (rng() % 1000 == 0 ? ".x" : "") + "\":\"s\"";
      break;
    case 5:
      extra = R"(,")" + big(60000) + R"(":1)";  // an unknown key gets a did-you-mean
      break;
    case 6:
      where = R"({"a":{"$in":[)" + std::string(rng() % 50000, '{') + "]}}";
      break;
  }
  return R"({"name":")" + name + R"(","kind":"copy","source":{"db":"s","collection":"a"},
    "target":{"db":"s","collection":"b","key":"aId","where":)" +
         where + R"(},"into":"a","fields":)" + fields + "}" + extra + "}";
}

TEST(robustness_test, hostile_mapping_shapes_give_clean_errors) {
  std::mt19937 rng(20261123);
  int rejected = 0;
  for (int i = 0; i < 60; ++i) {
    auto r = config::parse_mapping("fuzz.json", hostile_mapping(rng), "shop");
    if (r) continue;
    ++rejected;
    for (const auto& e : r.error()) {
      EXPECT_EQ(e.file, "fuzz.json");
      EXPECT_FALSE(e.message.empty());
    }
  }
  EXPECT_GT(rejected, 20);
}

// Folders mixing good files with symlink loops, dangling links, links to good files and
// folders named *.json: an error for each bad entry, never an exception.
TEST(robustness_test, hostile_mapping_folders_give_clean_errors) {
  const fs::path sample = fs::path(DENORMD_SOURCE_DIR) / "mappings" / "orders-customer.json";
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    const fs::path dir =
        fs::temp_directory_path() /
        ("denormd-fuzz-folder-" + std::to_string(::getpid()) + "-" + std::to_string(round));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(sample, dir / "0.json");
    int bad = 0;
    for (int i = 1, n = 1 + static_cast<int>(rng() % 6); i <= n; ++i) {
      const fs::path p = dir / (std::to_string(i) + ".json");
      switch (rng() % 4) {
        case 0:  // a loop: with itself, or through a second link
          if (rng() % 2 == 0) {
            fs::create_symlink(p.filename(), p);
          } else {
            fs::create_symlink(p.filename(), dir / ("loop" + std::to_string(i) + ".json"));
            fs::create_symlink("loop" + std::to_string(i) + ".json", p);
          }
          ++bad;
          break;
        case 1:
          fs::create_symlink("missing.json", p);
          ++bad;
          break;
        case 2:
          fs::create_directories(p);  // skipped: not a file
          break;
        case 3:
          fs::create_symlink("0.json", p);  // a duplicate name: one cross-file error
          ++bad;
          break;
      }
    }
    const auto r = config::load_mappings(dir, "shop");
    fs::remove_all(dir);
    if (bad == 0) {
      EXPECT_TRUE(r.has_value());
      continue;
    }
    ASSERT_FALSE(r.has_value());
    for (const auto& e : r.error())
      EXPECT_TRUE(fs::path(e.file).parent_path() == dir) << e.to_string();
  }
}

// A reference field of a sample event (or its _id) set to a hostile value; false when the
// event has no document to poison.
bool poison_reference(bson::document& ev, std::mt19937& rng) {
  bool poisoned = false;
  static const char* keys[] = {"customerId", "productId", "hostId", "_id"};
  for (const char* part : {"fullDocument", "documentKey"}) {
    auto* d = ev.get(part);
    if (d == nullptr || !d->is_document() || rng() % 2 == 0) continue;
    d->as_document().set(keys[rng() % std::size(keys)], hostile_value(rng));
    poisoned = true;
  }
  if (auto* items = ev.get("fullDocument"); items != nullptr && items->is_document()) {
    if (auto* arr = items->as_document().get("items"); arr != nullptr && arr->is_array()) {
      for (auto& item : arr->as_array()) {
        if (item.is_document() && rng() % 2 == 0) {
          item.as_document().set("productId", hostile_value(rng));
          poisoned = true;
        }
      }
    }
  }
  return poisoned;
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
  int planned_poisoned = 0;
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
    const bool poisoned = i % 3 == 0 && poison_reference(*doc, rng);
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
    if (poisoned) ++planned_poisoned;
    if (ops.size() > 64) {
      const auto merged = coalesce(std::move(ops));
      EXPECT_LE(merged.size(), 2 * 65u);  // a merge may add one $pull per parent, never more
      ops.clear();
    }
  }
  EXPECT_GT(planned, 800);
  EXPECT_GT(planned_poisoned, 200);  // hostile keys really reach the planner
  EXPECT_GT(rejected, 500);
}

}  // namespace
}  // namespace denormd::mapping
