// Partitioned streams (docs/architecture.md, "Partitioned streams"): the key a partition owns is
// the one the server computes with $toHashedIndexKey, each partition plans only the writes of the
// dependents whose keys it owns, narrows the writes whose dependents the event does not name to
// its own, keeps each dead letter once, and its stream's filter (evaluated here by the test
// server's query engine, as MongoDB would) keeps every event it plans anything for. Random events
// over every kind check that the partitions together plan what the whole namespace plans, each
// write exactly once.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "bson/hashed_key.h"
#include "bson/json.h"
#include "mapping/partition_route.h"
#include "mapping/planner.h"
#include "query_operators.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::load;

// Every kind reading shop.orders, and one filling it as a target.
const char* orders_mappings[] = {
    R"({"name":"oc","kind":"copy","source":{"collection":"customers"},
      "target":{"collection":"orders","key":"customerId"},"into":"customer",
      "fields":{"name":"name"},"fillNewTargets":true})",
    R"({"name":"inv","kind":"copy","source":{"collection":"orders"},
      "target":{"collection":"invoices","key":"orderId"},"into":"order",
      "fields":{"total":"total"}})",
    R"({"name":"bysku","kind":"copy","source":{"collection":"orders","key":"sku"},
      "target":{"collection":"stock","key":"sku"},"into":"lastOrder","fields":{"total":"total"}})",
    R"({"name":"co","kind":"recent","source":{"collection":"orders","parentKey":"customerId",
      "filter":{"status":{"$ne":"X"}}},"target":{"collection":"customers"},"into":"recentOrders",
      "fields":{"id":"_id","total":"total"},"idField":"id","sort":{"total":-1},"limit":3})",
    R"({"name":"spent","kind":"aggregate","source":{"collection":"orders",
      "parentKey":"customerId","filter":{"status":{"$ne":"X"}}},
      "target":{"collection":"customers"},"into":"spent",
      "fields":{"sum":{"$sum":"total"},"n":{"$count":{}}},"mode":"recompute"})",
    R"({"name":"inc","kind":"aggregate","source":{"collection":"orders",
      "parentKey":"customerId"},"target":{"collection":"customers"},"into":"inc",
      "fields":{"sum":{"$sum":"total"}},"mode":"incremental","fillNewTargets":true})"};

const ns orders{"shop", "orders"};
constexpr int parts = 3;

std::vector<mapping> mappings() {
  std::vector<mapping> out;
  for (const char* text : orders_mappings) {
    for (auto& m : load(text))
      out.push_back(std::move(m));
  }
  return out;
}

// Whether the stages of `p`'s stream for `unit` keep `event`, evaluated as the server would.
bool stream_keeps(const planner& p, const ns& unit, const bson::document& event) {
  for (const auto& stage : p.stream_filter(unit)) {
    const bson::value* match = stage.as_document().get("$match");
    if (match == nullptr) continue;
    auto m = mongo_emulator::engine::compile_query(match->as_document());
    EXPECT_TRUE(m) << bson::to_json(match->as_document());
    if (!m || !m->matches(event)) return false;
  }
  return true;
}

// A random key: ints, longs and doubles of one value route alike; strings and a null besides.
bson::value random_key(std::mt19937& rng) {
  const int k = static_cast<int>(rng() % 6);
  switch (rng() % 5) {
    case 0:
      return std::int64_t{k};
    case 1:
      return static_cast<double>(k);
    case 2:
      return "c" + std::to_string(k);
    case 3:
      return rng() % 4 == 0 ? bson::value() : bson::value(k);
    default:
      return k;
  }
}

bson::document random_order(std::mt19937& rng, int id) {
  bson::document d{{"_id", id},
                   {"customerId", random_key(rng)},
                   {"sku", random_key(rng)},
                   {"total", static_cast<int>(rng() % 100)}};
  if (rng() % 3 == 0) d.append("status", "X");
  return d;
}

// A random change event of shop.orders, with or without its images.
bson::document random_event(std::mt19937& rng, int n) {
  static const char* ops[] = {"insert", "update", "update", "replace", "delete"};
  const std::string op = ops[rng() % 5];
  const int id = static_cast<int>(rng() % 8);
  bson::document ev{{"_id", bson::document{{"_data", "82" + std::to_string(100000 + n)}}},
                    {"operationType", op},
                    {"ns", bson::document{{"db", "shop"}, {"coll", "orders"}}},
                    {"documentKey", bson::document{{"_id", id}}}};
  bson::document after = random_order(rng, id);
  bson::document before = after;
  if (op == "update") {
    // One field changed: the parent key, the filter's, a watched one, the copy key or none.
    static const char* fields[] = {"customerId", "status", "total", "sku", "note"};
    const std::string f = fields[rng() % 5];
    if (f == "status") {
      after.set("status", "X");
      before.erase("status");
    } else if (f == "note") {
      after.set("note", static_cast<int>(rng() % 10));
    } else {
      before.set(f, f == "total" ? bson::value(1) : random_key(rng));
    }
    ev.append("updateDescription",
              bson::document{{"updatedFields", bson::document{{f, *after.get(f)}}},
                             {"removedFields", bson::array{}}});
  } else if (op == "replace") {
    before.set("customerId", random_key(rng));
  }
  if (op == "insert" || op == "replace" || (op == "update" && rng() % 6 != 0))
    ev.append("fullDocument", after);
  if (op == "update" && !ev.contains("fullDocument")) ev.append("fullDocument", bson::value());
  if (op != "insert" && rng() % 3 != 0) ev.append("fullDocumentBeforeChange", before);
  return ev;
}

// The keys an op writes the dependents of; empty when the event does not name them.
std::vector<bson::value> keys_of(const write_op& op) {
  if (const auto* u = op.as<update_write>(); u != nullptr && u->delta) return {u->delta->parent};
  if (const auto* r = op.as<recompute_write>(); r != nullptr)
    return {r->keys.begin(), r->keys.end()};
  if (op.merge == merge_rule::last_wins || op.merge == merge_rule::push ||
      op.merge == merge_rule::parent_barrier)
    return {op.merge_key};
  return {};
}

// One line per written key (or per op, for ops of unknown dependents), to compare the
// partitions' plans with the whole namespace's.
std::string line_of(const write_op& op, const bson::value* key) {
  std::string s = op.source_mapping->name + " " + std::string(op.name());
  if (key != nullptr) s += " " + bson::to_json(bson::document{{"k", *key}});
  return s;
}

TEST(partition_route_test, owns_agrees_with_the_servers_hashed_partition) {
  // $toHashedIndexKey of 1, 1L and 1.0 is one key: they share a partition.
  const partition p{0, 4};
  for (int k = -50; k < 50; ++k) {
    const bool a = owns(p, bson::value(k));
    EXPECT_EQ(a, owns(p, bson::value(std::int64_t{k}))) << k;
    EXPECT_EQ(a, owns(p, bson::value(static_cast<double>(k)))) << k;
  }
  // "string to hash" hashes to 763543691661428748 (MongoDB's documentation): |h % 4| is 0.
  EXPECT_TRUE(owns(p, bson::value("string to hash")));
  EXPECT_TRUE(owns(partition{}, bson::value("anything")));
  // Every key has exactly one owner.
  for (int k = 0; k < 200; ++k) {
    int owners = 0;
    for (int i = 0; i < 4; ++i)
      owners += owns(partition{i, 4}, bson::value("k" + std::to_string(k))) ? 1 : 0;
    EXPECT_EQ(owners, 1);
  }
}

TEST(partition_route_test, the_narrowing_selects_each_dependent_in_exactly_one_partition) {
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    bson::document parent{{"_id", random_key(rng)}};
    int matched = 0;
    for (int i = 0; i < parts; ++i) {
      const bson::document f = narrowed(bson::document{{"x", bson::document{{"$exists", false}}}},
                                        partition{i, parts}, "_id");
      auto m = mongo_emulator::engine::compile_query(f);
      ASSERT_TRUE(m) << bson::to_json(f);
      const bool hit = m->matches(parent);
      EXPECT_EQ(hit, owns(partition{i, parts}, *parent.get("_id"))) << bson::to_json(parent);
      matched += hit ? 1 : 0;
    }
    EXPECT_EQ(matched, 1) << bson::to_json(parent);
  }
  // A filter with an $expr of its own keeps it.
  const bson::document both =
      narrowed(bson::document{{"$expr", bson::document{{"$eq", bson::array{1, 1}}}}},
               partition{1, parts}, "_id");
  EXPECT_TRUE(both.contains("$and")) << bson::to_json(both);
  EXPECT_EQ(narrowed(bson::document{{"a", 1}}, partition{}, "_id"), (bson::document{{"a", 1}}));
}

TEST(partition_route_test, units_name_their_partition_and_read_back) {
  const ns whole{"shop", "logmsgs"};
  const ns third{"shop", "logmsgs", partition{2, 4}};
  EXPECT_EQ(whole.unit(), "shop.logmsgs");
  EXPECT_EQ(third.unit(), "shop.logmsgs#2/4");
  EXPECT_EQ(third.full(), "shop.logmsgs");
  EXPECT_EQ(third.collection(), whole);
  EXPECT_EQ(parse_unit("shop.logmsgs#2/4"), third);
  EXPECT_EQ(parse_unit("shop.logmsgs"), whole);
  EXPECT_EQ(parse_unit("shop.a.b"), (ns{"shop", "a.b"}));
  // Not a partition suffix: part of the collection's name.
  EXPECT_EQ(parse_unit("shop.x#4/4"), (ns{"shop", "x#4/4"}));
  EXPECT_EQ(parse_unit("shop.x#1/1"), (ns{"shop", "x#1/1"}));
  EXPECT_EQ(parse_unit("nodot"), std::nullopt);
}

TEST(partition_route_test, the_planner_lists_each_partition_as_a_unit) {
  const planner p(mappings(), {{orders, 3}});
  std::vector<std::string> units;
  for (const auto& n : p.watched_namespaces())
    units.push_back(n.unit());
  EXPECT_EQ(units, (std::vector<std::string>{"shop.customers", "shop.orders#0/3", "shop.orders#1/3",
                                             "shop.orders#2/3"}));
  EXPECT_EQ(p.partitions_of(ns{"shop", "orders", partition{1, 3}}), 3);
  EXPECT_EQ(p.partitions_of(ns{"shop", "customers"}), 0);
  // A partition reads what its namespace reads.
  EXPECT_EQ(p.mappings_reading(ns{"shop", "orders", partition{1, 3}}), p.mappings_reading(orders));
  EXPECT_EQ(p.stream_filter(ns{"shop", "orders", partition{1, 3}}).size(), 2u);
  EXPECT_EQ(p.stream_filter(orders).size(), 1u);
}

TEST(partition_route_test, partitions_together_plan_what_the_namespace_plans_each_write_once) {
  const planner whole(mappings());
  const planner split(mappings(), {{orders, parts}});
  std::mt19937 rng(20261129);
  int narrowed_ops = 0;
  int routed_keys = 0;
  for (int n = 0; n < 2000; ++n) {
    const bson::document doc = random_event(rng, n);
    const change_event ev = testing::event(bson::to_json(doc));
    std::vector<write_op> all;
    whole.plan(ev, all);
    std::multiset<std::string> expected;
    std::multiset<std::string> unknown;
    std::size_t dead_letters = 0;
    for (const auto& op : all) {
      if (op.as<dead_letter_write>() != nullptr) {
        ++dead_letters;
        continue;
      }
      const auto keys = keys_of(op);
      for (const auto& k : keys)
        expected.insert(line_of(op, &k));
      if (keys.empty()) unknown.insert(line_of(op, nullptr));
    }
    std::multiset<std::string> got;
    std::map<std::string, int> narrowed_by;
    std::size_t got_dead_letters = 0;
    for (int i = 0; i < parts; ++i) {
      const ns unit{"shop", "orders", partition{i, parts}};
      std::vector<write_op> mine;
      split.plan(ev, mine, nullptr, nullptr, unit.part);
      if (!mine.empty()) {
        EXPECT_TRUE(stream_keeps(split, unit, doc))
            << "partition " << i << " plans for an event its stream drops: " << bson::to_json(doc);
      }
      std::multiset<std::string> mine_unknown;
      for (const auto& op : mine) {
        if (op.as<dead_letter_write>() != nullptr) {
          ++got_dead_letters;
          continue;
        }
        const auto keys = keys_of(op);
        for (const auto& k : keys) {
          EXPECT_TRUE(owns(unit.part, k)) << line_of(op, &k) << " planned by " << i;
          got.insert(line_of(op, &k));
          ++routed_keys;
        }
        if (keys.empty()) {
          const bson::document* sel = op.selector();
          ASSERT_NE(sel, nullptr);
          const std::string text = bson::to_json(*sel);
          if (op.as<fill_write>() == nullptr) {
            EXPECT_NE(text.find("$toHashedIndexKey"), std::string::npos) << text;
            ++narrowed_ops;
          }
          mine_unknown.insert(line_of(op, nullptr));
        }
      }
      // An op whose dependents the event does not name is planned, narrowed, by every
      // partition that may hold them (every one, for a change that moves them); a fill of a
      // new target by the target's own.
      for (const auto& line : mine_unknown) {
        if (line.find(" fill") != std::string::npos) {
          got.insert(line);
          continue;
        }
        EXPECT_LE(mine_unknown.count(line), unknown.count(line)) << line;
        narrowed_by[line] += 1;
      }
    }
    for (const auto& line : unknown) {
      if (line.find(" fill") != std::string::npos) continue;
      EXPECT_GE(narrowed_by[line], 1) << line << " planned by no partition: " << bson::to_json(doc);
    }
    for (const auto& line : unknown) {
      if (line.find(" fill") != std::string::npos) expected.insert(line);
    }
    EXPECT_EQ(got, expected) << bson::to_json(doc);
    EXPECT_EQ(got_dead_letters, dead_letters) << bson::to_json(doc);
  }
  EXPECT_GT(narrowed_ops, 100);
  EXPECT_GT(routed_keys, 1000);
}

TEST(partition_route_test, a_hand_over_skips_what_each_keys_old_owner_applied) {
  // Two old partitions had applied through "0b" and "0d"; this new partition (whole) owns every
  // key, but an event at "0c" only for the keys of old partition 0.
  const handover from{2, {"0b", "0d"}};
  std::vector<bson::value> of0;
  std::vector<bson::value> of1;
  for (int k = 0; k < 40; ++k) {
    (owns(partition{0, 2}, bson::value(k)) ? of0 : of1).push_back(bson::value(k));
  }
  ASSERT_FALSE(of0.empty());
  ASSERT_FALSE(of1.empty());
  const key_share at_c(partition{}, &from, "0c");
  const key_share at_a(partition{}, &from, "0a");
  const key_share at_e(partition{}, &from, "0e");
  for (const auto& k : of0) {
    EXPECT_TRUE(at_c.owns(k));
    EXPECT_FALSE(at_a.owns(k));
    EXPECT_TRUE(at_e.owns(k));
  }
  for (const auto& k : of1) {
    EXPECT_FALSE(at_c.owns(k));
    EXPECT_TRUE(at_e.owns(k));
  }
  EXPECT_FALSE(from.passed("0c"));
  EXPECT_TRUE(from.passed("0e"));
  // Narrowed: only the dependents of old partition 0 at "0c", as the server evaluates it.
  const bson::document f = at_c.narrowed(bson::document{}, "_id");
  auto m = mongo_emulator::engine::compile_query(f);
  ASSERT_TRUE(m) << bson::to_json(f);
  for (const auto& k : of0)
    EXPECT_TRUE(m->matches(bson::document{{"_id", k}})) << bson::to_json(f);
  for (const auto& k : of1)
    EXPECT_FALSE(m->matches(bson::document{{"_id", k}})) << bson::to_json(f);
  // Past every old position: nothing narrowed.
  EXPECT_EQ(at_e.narrowed(bson::document{{"a", 1}}, "_id"), (bson::document{{"a", 1}}));
}

TEST(partition_route_test, a_new_layout_takes_over_from_the_newest_other_one) {
  const partition mine{1, 2};
  // Nothing else stored: nothing to hand over.
  EXPECT_EQ(handover_for(mine, {{partition{0, 2}, "05"}}), std::nullopt);
  // The whole namespace before: one old position.
  EXPECT_EQ(handover_for(mine, {{partition{}, "07"}}), (handover{1, {"07"}}));
  // An old layout of 4 (stale) and one of 3 (newer, one partition never stored): the newer.
  const std::vector<unit_position> stored{{partition{0, 4}, "02"}, {partition{1, 4}, "03"},
                                          {partition{2, 4}, "02"}, {partition{3, 4}, "04"},
                                          {partition{0, 3}, "06"}, {partition{2, 3}, "08"},
                                          {partition{1, 3}, "07"}};
  EXPECT_EQ(handover_for(mine, stored), (handover{3, {"06", "07", "08"}}));
  // Its own position past them all: done.
  auto with_own = stored;
  with_own.push_back({mine, "09"});
  EXPECT_EQ(handover_for(mine, with_own), std::nullopt);
  with_own.back().position = "07";
  EXPECT_EQ(handover_for(mine, with_own), (handover{3, {"06", "07", "08"}}));
  // Back to the whole namespace from partitions.
  EXPECT_EQ(handover_for(partition{}, {{partition{0, 2}, "05"}, {partition{1, 2}, "06"}}),
            (handover{2, {"05", "06"}}));
}

TEST(partition_route_test, a_dotted_route_reads_every_event) {
  const planner p(load(R"({"name":"d","kind":"recent","source":{"collection":"logs",
    "parentKey":"host.id"},"target":{"collection":"hosts"},"into":"recent",
    "fields":{"id":"_id","at":"at"},"idField":"id","sort":{"at":-1},"limit":2})"),
                  {{ns{"shop", "logs"}, 2}});
  // The server could follow an array on the way where the planner would not: no narrowing.
  EXPECT_EQ(p.stream_filter(ns{"shop", "logs", partition{0, 2}}).size(), 1u);
}

}  // namespace
}  // namespace denormd::mapping
