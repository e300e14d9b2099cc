// Randomized robustness: malformed mapping files and malformed change events must give a
// clean error (or a valid result), never a crash. Deterministic seeds; run under the
// sanitizer build to catch memory errors too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <type_traits>

#include <unistd.h>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "mapping/coalescer.h"
#include "mapping/planner.h"
#include "mapping/reference.h"

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

// The oracle of the event fuzzers (docs/mappings.md, "Reference values are data, never queries"):
// in every filter a planned op carries, a value taken from a document sits where MongoDB can only
// match it literally. A field's condition must be one of the shapes the planner builds
// (mapping/reference.h): literal() {$eq: v}, key_match() {$eq: v, $not: {$type: "array"}}, or
// the recent guard {$ne: v}; their operand is literal whatever it holds. A bare value (an
// object there would read as operators, an array or a regex as a pattern) or any other
// operator fails, unless it is the mapping's own `where`/`filter`: that is the operator's
// text, not a document's. At the top level only $and (the planner joins with it) is allowed.
class literal_oracle {
 public:
  explicit literal_oracle(const mapping& m) {
    m.visit([&](const auto& k) {
      using kind = std::decay_t<decltype(k)>;
      if constexpr (std::is_same_v<kind, copy_kind>) {
        if (k.where) trusted_ = &k.where->filter();
      } else {
        if (k.filter) trusted_ = &k.filter->filter();
      }
    });
  }

  // Checks every query `op` sends: its filter, array filters, $pull conditions, a fill's
  // source query and a refill's children query (built with each of `probes` as the parent
  // key a parent document might hold). A dead letter sends nothing.
  void check(const write_op& op, const std::vector<bson::value>& probes) {
    const std::string at = std::string(op.name()) + " of " + op.source_mapping->name;
    if (const auto* update = op.as<update_write>()) {
      filter(update->filter, at + " filter");
      for (const auto& f : update->array_filters)
        element_filter(f, at + " arrayFilters");
      pull(update->update, at + " update");
    } else if (const auto* fill = op.as<fill_write>()) {
      filter(fill->filter, at + " filter");
      for (const auto& f : fill->array_filters)
        element_filter(f, at + " arrayFilters");
      filter(fill_filter(fill->source), at + " source query");
    } else if (const auto* refill = op.as<refill_write>()) {
      filter(refill->parents, at + " parents");
      for (const auto& key : probes)
        filter(children_filter(refill->children, key), at + " children query");
    } else if (const auto* recompute = op.as<recompute_write>()) {
      const auto& k = std::get<aggregate_kind>(op.source_mapping->kind);
      bson::document parents = recompute->parents;
      if (op.merge == merge_rule::retype) {
        // A type check's condition on the running sums is the mapping's own (paths and
        // constants, no value from a document): the one the kind builds; the rest as any.
        const write_op own = k.retype(*op.source_mapping, {});
        const bson::value* stale = parents.get("$or");
        if (stale == nullptr ||
            !(*stale == *std::get<recompute_write>(own.what).parents.get("$or")))
          fail(at, "$or", stale != nullptr ? *stale : bson::value{},
               "is not the kind's type check");
        parents.erase("$or");
      }
      filter(parents, at + " parents");
      const auto pipeline = k.pipeline(recompute->keys);
      filter(pipeline.at(0).as_document().get("$match")->as_document(), at + " children $match");
    } else {
      ++dead_letters;
    }
  }

  std::vector<std::string> problems;
  int literal_conditions = 0;  // conditions found in a planner's shape
  int dead_letters = 0;

 private:
  static bool planner_condition(const bson::value& v) {
    if (!v.is_document()) return false;
    const auto& f = v.as_document().fields();
    static const bson::value not_array(bson::document{{"$type", "array"}});
    if (!f.empty() && f[0].name == "$in") {
      // The aggregate kind's keys_match(): {$in: keys[, $not: {$type: "array"}]}, each key a
      // value that can be a reference (no regex, no operator document), so matched literally.
      const bool shape =
          f.size() == 1 || (f.size() == 2 && f[1].name == "$not" && f[1].val == not_array);
      if (!shape || !f[0].val.is_array()) return false;
      const auto& keys = f[0].val.as_array();
      return std::none_of(keys.begin(), keys.end(),
                          [](const bson::value& k) { return reference_problem(k).has_value(); });
    }
    if (f.size() == 1) return f[0].name == "$eq" || f[0].name == "$ne";
    return f.size() == 2 && f[0].name == "$eq" && f[1].name == "$not" && f[1].val == not_array;
  }

  void fail(const std::string& at, std::string_view field, const bson::value& v,
            std::string_view why) {
    problems.push_back(at + ": \"" + std::string(field) + "\": " + describe_value(v, 120) + " " +
                       std::string(why));
  }

  void filter(const bson::document& f, const std::string& at) {
    for (const auto& [name, val] : f) {
      if (trusted_ != nullptr) {
        const bson::value* own = trusted_->get(name);
        if (own != nullptr && *own == val) continue;  // the mapping's own condition
      }
      if (name == "$and") {
        if (!val.is_array()) {
          fail(at, name, val, "is not an array");
          continue;
        }
        for (const auto& part : val.as_array()) {
          if (!part.is_document()) {
            fail(at, name, part, "is not a query");
          } else if (trusted_ == nullptr || !(part.as_document() == *trusted_)) {
            filter(part.as_document(), at + " $and");
          }
        }
      } else if (name.starts_with('$')) {
        fail(at, name, val, "is an operator the planner never puts at the top level");
      } else {
        condition(name, val, at);
      }
    }
  }

  void element_filter(const bson::value& f, const std::string& at) {
    if (!f.is_document()) {
      fail(at, "", f, "is not a query");
      return;
    }
    for (const auto& [name, val] : f.as_document())
      condition(name, val, at);
  }

  void condition(std::string_view field, const bson::value& v, const std::string& at) {
    if (planner_condition(v)) {
      ++literal_conditions;
    } else {
      fail(at, field, v, "is not matched literally ({$eq: v} as key_match builds it)");
    }
  }

  // {$pull: {<into>: {<idField>: {$eq: id}}}}, or {$in: [ids]} for merged pushes: $in reads
  // its elements literally except a regex (a pattern) and an array (matched element-wise);
  // a $-document in it is an error on MongoDB ("cannot nest $ under $in").
  void pull(const bson::document& update, const std::string& at) {
    const bson::value* p = update.get("$pull");
    if (p == nullptr || !p->is_document()) return;
    for (const auto& [path, cond] : p->as_document()) {
      if (!cond.is_document()) {
        fail(at, path, cond, "is a $pull of a value, not of matching elements");
        continue;
      }
      for (const auto& [name, val] : cond.as_document()) {
        static const std::vector<bson::field> none;
        const auto& f = val.is_document() ? val.as_document().fields() : none;
        if (f.size() == 1 && f[0].name == "$in" && f[0].val.is_array()) {
          for (const auto& id : f[0].val.as_array()) {
            if (id.is_array() || id.kind() == bson::type::regex ||
                (id.is_document() && !id.as_document().empty() &&
                 id.as_document().fields().front().name.starts_with('$'))) {
              fail(at + " $pull", name, id, "in $in is not matched literally");
            }
          }
          ++literal_conditions;
        } else {
          condition(name, val, at + " $pull");
        }
      }
    }
  }

  const bson::document* trusted_ = nullptr;
};

// Runs the oracle over ops[from...]; reports the problems of the first op that has any, with
// the event it was planned for.
void expect_literal(const std::vector<write_op>& ops, std::size_t from,
                    const std::vector<bson::value>& probes, const std::string& event,
                    int& literal_conditions, int& dead_letters) {
  for (std::size_t i = from; i < ops.size(); ++i) {
    literal_oracle oracle(*ops[i].source_mapping);
    oracle.check(ops[i], probes);
    literal_conditions += oracle.literal_conditions;
    dead_letters += oracle.dead_letters;
    for (const auto& p : oracle.problems)
      ADD_FAILURE() << p << "\n  planned for: " << event.substr(0, 600);
    if (!oracle.problems.empty()) return;
  }
}

std::string describe(const change_event& ev) {
  return ev.op_name + " of " + ev.source.full() + " _id " + describe_value(ev.id) +
         (ev.full_document ? " " + describe_value(bson::value(*ev.full_document), 400) : "");
}

// Parent keys a refill's children query is built with at completion time, read from parent
// documents: plain ones and hostile ones.
std::vector<bson::value> refill_probes() {
  return {bson::value(7),
          bson::value(bson::document{{"$gt", -1}}),
          bson::value(bson::document{{"$ne", bson::value()}}),
          bson::value(bson::array{bson::value(1)}),
          bson::value(bson::regex{".*", ""}),
          bson::value(bson::document{{"a", bson::document{{"$exists", true}}}})};
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
  int literal_conditions = 0;
  int dead_letters = 0;
  const auto probes = refill_probes();
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
    const std::size_t before = ops.size();
    p.plan(*ev, ops);
    ++planned;
    if (poisoned) ++planned_poisoned;
    expect_literal(ops, before, probes, describe(*ev), literal_conditions, dead_letters);
    if (ops.size() > 64) {
      const auto merged = coalesce(std::move(ops));
      EXPECT_LE(merged.size(), 2 * 65u);  // a merge may add one $pull per parent, never more
      expect_literal(merged, 0, probes, "a coalesced batch", literal_conditions, dead_letters);
      ops.clear();
    }
  }
  EXPECT_GT(planned, 800);
  EXPECT_GT(planned_poisoned, 200);  // hostile keys really reach the planner
  EXPECT_GT(rejected, 500);
  // The oracle really looked: many conditions, and hostile keys refused.
  EXPECT_GT(literal_conditions, 1000);
  EXPECT_GT(dead_letters, 100);
}

// The fields a mapping reads references from, as dotted paths in the documents of its events:
// the source key, the parentKey, the target key (inside each element of target.array), _id.
std::vector<std::string> reference_paths(const mapping& m) {
  std::vector<std::string> paths{"_id"};
  m.visit([&](const auto& k) {
    using kind = std::decay_t<decltype(k)>;
    if constexpr (std::is_same_v<kind, copy_kind>) {
      paths.push_back(k.source_key);
      paths.push_back(k.target_array.empty() ? k.target_key : k.target_array + "." + k.target_key);
    } else {
      paths.push_back(k.parent_key);
      paths.push_back(k.parent_field);
    }
  });
  return paths;
}

// Sets `v` at `dotted`, creating documents on the way; through an array, in its document
// elements (each with probability 1/2, at least the first).
void poison_path(bson::document& d, std::string_view dotted, const bson::value& v,
                 std::mt19937& rng) {
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) {
    d.set(dotted, v);
    return;
  }
  bson::value* child = d.get(dotted.substr(0, dot));
  if (child != nullptr && child->is_array()) {
    bool first = true;
    for (auto& item : child->as_array()) {
      if (item.is_document() && (first || rng() % 2 == 0))
        poison_path(item.as_document(), dotted.substr(dot + 1), v, rng);
      first = first && !item.is_document();
    }
    return;
  }
  if (child == nullptr || !child->is_document())
    child = &d.set(dotted.substr(0, dot), bson::document{});
  poison_path(child->as_document(), dotted.substr(dot + 1), v, rng);
}

// Every route a reference takes, in the mappings of every golden case (source key other than
// _id, parentKey, target key other than _id, array key, fills of new targets), with hostile
// values at those fields of the case's own events: each planned op matches what it took from a
// document literally, or the event is a dead letter.
TEST(robustness_test, hostile_keys_on_every_route_are_matched_literally_or_dead_lettered) {
  std::mt19937 rng(20261124);
  const auto probes = refill_probes();
  int planned = 0;
  int literal_conditions = 0;
  int dead_letters = 0;
  for (const auto& dir : fs::directory_iterator(fs::path(DENORMD_SOURCE_DIR) / "tests/cases")) {
    if (!dir.is_directory()) continue;
    std::string db;
    if (fs::exists(dir.path() / "options.json")) {
      auto opts = bson::parse_json(read_file(dir.path() / "options.json"));
      ASSERT_TRUE(opts.has_value());
      if (const auto* d = opts->get("db")) db = d->as_string();
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      const auto name = e.path().filename().string();
      if (name.starts_with("mapping") && name.ends_with(".json")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    auto loaded = config::load_mapping_files(files, db);
    ASSERT_TRUE(loaded.has_value()) << dir.path();
    const planner p(std::move(loaded).value());
    std::vector<std::string> paths;
    for (const auto& m : p.mappings()) {
      for (auto& path : reference_paths(m))
        paths.push_back(std::move(path));
    }
    std::ifstream in(dir.path() / "events.jsonl");
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      for (int round = 0; round < 40; ++round) {
        auto doc = bson::parse_json(line);
        ASSERT_TRUE(doc.has_value()) << line;
        const bson::value hostile = hostile_value(rng);
        const std::string& path = paths[rng() % paths.size()];
        for (const char* part : {"fullDocument", "fullDocumentBeforeChange", "documentKey"}) {
          auto* d = doc->get(part);
          if (d == nullptr || !d->is_document()) continue;
          if (std::string_view(part) == "documentKey" && path != "_id") continue;
          poison_path(d->as_document(), path, hostile, rng);
        }
        auto ev = change_event::parse(std::move(doc).value());
        if (!ev) continue;  // e.g. an _id the parser refuses
        std::vector<write_op> ops;
        p.plan(*ev, ops);
        ++planned;
        expect_literal(ops, 0, probes, dir.path().filename().string() + ": " + describe(*ev),
                       literal_conditions, dead_letters);
      }
    }
  }
  EXPECT_GT(planned, 2000);
  EXPECT_GT(literal_conditions, 1000);
  EXPECT_GT(dead_letters, 500);  // hostile keys are refused on these routes
}

}  // namespace
}  // namespace denormd::mapping
