#include "mapping/aggregate_kind.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "fake_store.h"
#include "mapping/coalescer.h"
#include "mapping/computed_expression.h"
#include "mapping/computed_fields.h"
#include "mapping/planner.h"
#include "mapping/write_op.h"
#include "test_helpers.h"
// The test server's document engine applies the planned pipeline updates as MongoDB would.
#include "numeric.h"
#include "pipeline.h"
#include "query_operators.h"
#include "update.h"

namespace denormd::mapping {
namespace {

using testing::event;
using testing::fake_store;
using testing::load;

const char* rating_mapping = R"({"name":"pr","kind":"aggregate",
  "source":{"collection":"reviews","parentKey":"productId","filter":{"hidden":{"$ne":true}}},
  "target":{"collection":"products"},"into":"rating",
  "fields":{"count":{"$count":{}},"sum":{"$sum":"stars"},"avg":{"$avg":"stars"},
            "min":{"$min":"stars"},"max":{"$max":"stars"}}})";

const aggregate_kind& kind_of(const mapping& m) {
  return std::get<aggregate_kind>(m.kind);
}

std::string load_errors(const std::string& json) {
  auto r = config::parse_mapping("m.json", json, "shop");
  if (r) return "";
  std::string out;
  for (const auto& e : r.error())
    out += e.to_string() + "\n";
  return out;
}

TEST(aggregate_kind_test, reads_accumulators_in_order_with_their_paths) {
  auto ms = load(rating_mapping);
  ASSERT_EQ(ms.size(), 1u);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  EXPECT_EQ(m.kind_name(), "aggregate");
  ASSERT_EQ(k.accumulators.size(), 5u);
  EXPECT_EQ(k.accumulators[0].op, accumulator_op::count);
  EXPECT_EQ(k.accumulators[0].path, "");
  EXPECT_EQ(k.accumulators[2].op, accumulator_op::avg);
  EXPECT_EQ(k.accumulators[2].path, "stars");
  EXPECT_EQ(k.parent_key, "productId");
  EXPECT_EQ(k.parent_field, "_id");
  EXPECT_EQ(k.mode, aggregate_mode::recompute);
  EXPECT_EQ(m.on_source_delete, delete_policy::recompute);
  EXPECT_EQ(m.written_paths(), (std::vector<std::string>{"rating.count", "rating.sum", "rating.avg",
                                                         "rating.min", "rating.max"}));
  // The children's fields a change of which matters: the accumulated path, the key, the filter.
  EXPECT_EQ(m.watched_paths(), (std::vector<std::string>{"stars", "productId", "hidden"}));
  const planner p(std::move(ms));
  EXPECT_TRUE(p.needs_images(ns{"shop", "reviews"}).before);
  EXPECT_FALSE(p.needs_images(ns{"shop", "reviews"}).after);  // recompute: updateLookup will do
  EXPECT_FALSE(p.needs_images(ns{"shop", "products"}).before);
}

// A child on which an expression fails is left out of the accumulators that evaluate it (it
// still counts), while it is as it was when it failed; changed, it is evaluated again.
TEST(aggregate_kind_test, a_failing_child_is_left_out_while_it_is_as_it_failed) {
  auto ms = load(R"({"name":"cs","kind":"aggregate",
    "source":{"collection":"lines","parentKey":"customerId"},"target":{"collection":"customers"},
    "into":"spent","fields":{"total":{"$sum":{"$multiply":["$quantity","$price"]}},
    "avg":{"$avg":{"$toInt":"$quantity"}},"n":{"$count":{}}}})");
  const mapping& m = ms.front();
  const aggregate_kind& k = kind_of(m);
  auto doc = [](const char* json) { return bson::parse_json(json).value(); };
  std::vector<bson::document> children{doc(R"({"_id":1,"customerId":7,"quantity":2,"price":5})"),
                                       doc(R"({"_id":2,"customerId":7,"quantity":"x","price":5})")};
  const bson::array keys{7};
  // The groups, or nullopt when the test server refuses the aggregation.
  auto group =
      [&](std::span<const failing_child> failing) -> std::optional<std::vector<bson::document>> {
    auto stages = mongo_emulator::engine::parse_pipeline(k.pipeline(keys, failing));
    EXPECT_TRUE(stages) << stages.error().message;
    try {
      auto out = mongo_emulator::engine::run_pipeline(*stages, children);
      if (!out) return std::nullopt;
      return std::move(out).value();
    } catch (const std::exception&) {  // an expression's run-time error fails the command
      return std::nullopt;
    }
  };
  ASSERT_FALSE(group({}));  // $multiply of a string: refused
  const mapping* one = &m;
  const computed_fields reads(std::span<const mapping* const>(&one, 1));
  std::vector<failing_child> failing;
  for (const auto& e : reads.entries()) {
    const bson::document input = reads.input(children[1]);
    failing.push_back({e.expression->key(), input, reads.same_input(input), 7, "fails"});
  }
  auto groups = group(failing);
  ASSERT_TRUE(groups);
  ASSERT_EQ(groups->size(), 1U);
  EXPECT_EQ(bson::to_json((*groups)[0]), R"({"_id":7,"v0":10,"v1":2.0,"v2":2})");
  // Changed since (still failing): evaluated again, so refused again, and found again.
  children[1] = doc(R"({"_id":2,"customerId":7,"quantity":"y","price":5})");
  EXPECT_FALSE(group(failing));
  // Changed to a good value: it counts again.
  children[1] = doc(R"({"_id":2,"customerId":7,"quantity":3,"price":5})");
  groups = group(failing);
  ASSERT_TRUE(groups);
  EXPECT_EQ(bson::to_json((*groups)[0]), R"({"_id":7,"v0":25,"v1":2.5,"v2":2})");
  EXPECT_EQ(failing.front().reason(m),
            "the child 2 of the parent 7 is left out of cs's values: an accumulator's expression "
            "fails on it: fails");
}

TEST(aggregate_kind_test, bad_accumulators_are_errors_naming_the_field) {
  const std::string head = R"({"name":"pr","kind":"aggregate",
    "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},)";
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$push":"stars"}}})")
                .find("m.json: /fields/n/$push: \"$push\" is not an accumulator"),
            std::string::npos);
  EXPECT_NE(
      load_errors(head + R"("fields":{"n":{"$count":1}}})").find("/fields/n/$count: must be {}"),
      std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$sum":"$stars"}}})")
                .find("(write the path without '$': \"stars\")"),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":"stars"}})").find("/fields/n: must be an object"),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$sum":"a","$avg":"b"}}})")
                .find("/fields/n: must be an object with one accumulator"),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$count":{}}},"mode":"incremental"})")
                .find("/into: required in incremental mode"),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("into":"r","fields":{"n":{"$count":{}},"top":{"$max":"stars"}},
                                  "mode":"incremental"})")
                .find("/fields/top: $max is not available in incremental mode"),
            std::string::npos);
  EXPECT_EQ(load_errors(head + R"("into":"r","fields":{"n":{"$count":{}},"s":{"$avg":"stars"}},
                                  "mode":"incremental","fillNewTargets":true})"),
            "");
  // Without the parents watched, a parent inserted after its children would stay partial.
  EXPECT_NE(load_errors(head + R"("into":"r","fields":{"n":{"$count":{}}},"mode":"incremental"})")
                .find("/fillNewTargets: must be true in incremental mode"),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$count":{}}},"mode":"fast"})")
                .find("/mode: must be \"recompute\" or \"incremental\", not \"fast\""),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"_id":{"$count":{}}}})")
                .find("overlaps the parent key field \"_id\""),
            std::string::npos);
  EXPECT_NE(load_errors(head + R"("fields":{"n":{"$count":{}}},"onSourceDelete":"pull"})")
                .find("\"pull\" is not a policy of a aggregate mapping (use \"recompute\")"),
            std::string::npos);
  EXPECT_EQ(load_errors(head + R"("fields":{"n":{"$count":{}}}})"), "");
}

TEST(aggregate_kind_test, no_matching_child_means_zero_count_and_sum_and_no_extremes) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  EXPECT_EQ(bson::to_json(k.update_for(m, nullptr)),
            R"({"$set":{"rating.count":0,"rating.sum":0},)"
            R"("$unset":{"rating.avg":"","rating.min":"","rating.max":""}})");
  const auto group =
      *bson::parse_json(R"({"_id":9,"v0":2,"v1":{"$numberLong":"7"},"v2":3.5,"v3":2,"v4":5})");
  EXPECT_EQ(bson::to_json(k.update_for(m, &group)),
            R"({"$set":{"rating.count":2,"rating.sum":7,"rating.avg":3.5,"rating.min":2,)"
            R"("rating.max":5}})");
  // check() (verify) compares as MongoDB's equality does: an int32 7 where the sum is an
  // int64 7 is the same value.
  const auto parent =
      *bson::parse_json(R"({"_id":9,"rating":{"count":2,"sum":7,"avg":3.5,"min":2,"max":5}})");
  EXPECT_TRUE(k.check(m, parent, &group).empty());
  const auto other =
      *bson::parse_json(R"({"_id":9,"rating":{"count":2,"sum":8,"avg":3.5,"min":2,"max":5}})");
  EXPECT_EQ(k.check(m, other, &group), std::vector<std::string>{"rating.sum"});
  const auto empty_parent = *bson::parse_json(R"({"_id":9,"rating":{"count":0,"sum":0}})");
  EXPECT_TRUE(k.check(m, empty_parent, nullptr).empty());
  EXPECT_EQ(k.check(m, parent, nullptr),
            (std::vector<std::string>{"rating.count", "rating.sum", "rating.avg", "rating.min",
                                      "rating.max"}));
}

TEST(aggregate_kind_test, a_nan_average_is_not_drift_against_itself) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto group = *bson::parse_json(
      R"({"_id":9,"v0":1,"v1":{"$numberDouble":"NaN"},"v2":{"$numberDouble":"NaN"},"v3":1,"v4":1})");
  const auto parent = *bson::parse_json(
      R"({"_id":9,"rating":{"count":1,"sum":{"$numberDouble":"NaN"},"avg":{"$numberDouble":"NaN"},)"
      R"("min":1,"max":1}})");
  EXPECT_TRUE(kind_of(m).check(m, parent, &group).empty());
}

// A recompute writes the server's own types: a value of another numeric type is rewritten,
// though verify does not count it as drift; a NaN is not rewritten.
TEST(aggregate_kind_test, completing_a_recompute_rewrites_other_types_but_not_nan) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  fake_store store;
  store.add("products", R"({"_id":1,"rating":{"count":1,"sum":4,"avg":4,"min":4,"max":4}})");
  store.add("products", R"({"_id":2,"rating":{"count":1,"sum":{"$numberDouble":"NaN"},)"
                        R"("avg":{"$numberDouble":"NaN"},"min":{"$numberDouble":"NaN"},)"
                        R"("max":{"$numberDouble":"NaN"}}})");
  store.add("reviews", R"({"_id":10,"productId":1,"stars":4})");
  store.add("reviews", R"({"_id":11,"productId":2,"stars":{"$numberDouble":"NaN"}})");
  const auto op = k.recompute(m, bson::array{1, 2});
  ASSERT_TRUE(k.complete(m, op, store));
  ASSERT_EQ(store.writes.size(), 1u);
  EXPECT_EQ(store.writes[0].filter, R"({"_id":{"$eq":1}})");
}

TEST(aggregate_kind_test, completing_a_recompute_writes_only_the_parents_that_differ) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  fake_store store;
  store.add("products", R"({"_id":1})");
  store.add("products", R"({"_id":2,"rating":{"count":1,"sum":4,"avg":4.0,"min":4,"max":4}})");
  store.add("products", R"({"_id":3,"rating":{"count":5,"sum":9,"avg":1.8,"min":1,"max":3}})");
  store.add("reviews", R"({"_id":10,"productId":1,"stars":4})");
  store.add("reviews", R"({"_id":11,"productId":1,"stars":2})");
  store.add("reviews", R"({"_id":12,"productId":2,"stars":4})");
  const auto op = k.recompute(m, bson::array{1, 2, 3});
  ASSERT_TRUE(k.complete(m, op, store));
  EXPECT_EQ(store.aggregates, 1);  // one aggregation for the batch's parents
  EXPECT_EQ(store.bulks, 1);       // and one round trip for the parents that differ
  ASSERT_EQ(store.writes.size(), 2u);
  EXPECT_EQ(store.writes[0].filter, R"({"_id":{"$eq":1}})");
  EXPECT_EQ(store.writes[0].update,
            R"({"$set":{"rating.count":2,"rating.sum":6,"rating.avg":3.0,"rating.min":2,)"
            R"("rating.max":4}})");
  // Parent 3 lost its children.
  EXPECT_EQ(store.writes[1].filter, R"({"_id":{"$eq":3}})");
  EXPECT_EQ(store.writes[1].update,
            R"({"$set":{"rating.count":0,"rating.sum":0},)"
            R"("$unset":{"rating.avg":"","rating.min":"","rating.max":""}})");
  EXPECT_NE(store.last_pipeline.find(R"("productId":{"$in":[1,2,3],"$not":{"$type":"array"}})"),
            std::string::npos)
      << store.last_pipeline;
}

TEST(aggregate_kind_test, a_parent_key_that_cannot_be_a_reference_is_left_alone) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  fake_store store;
  store.add("products", R"({"_id":{"$gt":0}})");
  ASSERT_TRUE(kind_of(m).complete(m, kind_of(m).recompute(m, {}), store));
  EXPECT_EQ(store.aggregates, 0);
  EXPECT_TRUE(store.writes.empty());
}

TEST(aggregate_kind_test, with_recheck_a_change_between_read_and_write_is_written_too) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  fake_store store;
  store.add("products", R"({"_id":1})");
  store.add("reviews", R"({"_id":10,"productId":1,"stars":4})");
  // The stream's own recompute ran (and wrote 5 stars) between our read and our write.
  store.after_first_write = [&] {
    store.replace_all("reviews", R"({"_id":10,"productId":1,"stars":5})");
  };
  const auto op = k.recompute_selected(m, bson::document{}, true);
  ASSERT_TRUE(k.complete(m, op, store));
  EXPECT_EQ(store.aggregates, 3);  // read, read again (changed), read again (same)
  ASSERT_EQ(store.writes.size(), 2u);
  EXPECT_NE(store.writes[1].update.find(R"("rating.sum":5)"), std::string::npos);

  fake_store plain;  // without recheck: one read, one write
  plain.add("products", R"({"_id":1})");
  plain.add("reviews", R"({"_id":10,"productId":1,"stars":4})");
  ASSERT_TRUE(k.complete(m, k.recompute_selected(m, bson::document{}, false), plain));
  EXPECT_EQ(plain.aggregates, 1);
}

TEST(aggregate_kind_test, a_failed_read_or_write_stops_the_recompute) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  for (int calls = 0; calls < 3; ++calls) {
    fake_store store;
    store.add("products", R"({"_id":1})");
    store.add("reviews", R"({"_id":10,"productId":1,"stars":4})");
    store.fail_after(calls);  // parents, aggregate, write
    EXPECT_FALSE(k.complete(m, k.recompute(m, bson::array{1}), store)) << calls;
    EXPECT_TRUE(store.writes.empty());
  }
}

TEST(aggregate_kind_test, recomputes_of_a_batch_merge_into_one_and_every_parent_absorbs_them) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  std::vector<write_op> ops;
  ops.push_back(k.recompute(m, bson::array{1}));
  ops.push_back(k.recompute(m, bson::array{2, 1}));
  ops.push_back(k.recompute(m, bson::array{3}));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ops[i].event = i;
    ops[i].event_ms = 100 - static_cast<std::int64_t>(i);
  }
  auto merged = coalesce(ops);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(bson::to_json(merged[0].as<recompute_write>()->keys), "[1,2,3]");
  EXPECT_EQ(bson::to_json(*merged[0].selector()), R"({"_id":{"$in":[1,2,3]}})");
  EXPECT_EQ(merged[0].event, 2u);     // the last event it applies
  EXPECT_EQ(merged[0].event_ms, 98);  // the earliest wall time

  ops.push_back(k.recompute(m, {}));
  merged = coalesce(ops);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_TRUE(merged[0].as<recompute_write>()->keys.empty());
  EXPECT_TRUE(merged[0].selector()->empty());
}

TEST(aggregate_kind_test, recompute_keys_merge_as_mongodb_compares_them) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  std::vector<write_op> ops;
  ops.push_back(k.recompute(m, bson::array{1}));
  ops.push_back(k.recompute(m, bson::array{std::int64_t{1}, 2.0}));
  ops.push_back(k.recompute(m, bson::array{1.0, 2}));
  auto merged = coalesce(ops);
  ASSERT_EQ(merged.size(), 1u);
  // One parent per value: 1, 1L and 1.0 are one _id.
  EXPECT_EQ(bson::to_json(merged[0].as<recompute_write>()->keys), "[1,2.0]");
}

TEST(aggregate_kind_test, an_every_parent_recompute_reads_its_parents_a_page_at_a_time) {
  auto ms = load(rating_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  fake_store store;
  store.honor_limit = true;
  for (int i = 1; i <= 2500; ++i)
    store.add("products", R"({"_id":)" + std::to_string(i) + "}");
  store.add("reviews", R"({"_id":10,"productId":2500,"stars":4})");
  ASSERT_TRUE(k.complete(m, k.recompute(m, {}), store));
  EXPECT_EQ(store.finds, 3);  // 1,000 + 1,000 + 500 parents, in _id order
  EXPECT_EQ(store.last_sort, R"({"_id":1})");
  EXPECT_EQ(store.aggregates, 3);
  ASSERT_EQ(store.writes.size(), 2500u);  // every parent gets its values (count 0, or 1)
  EXPECT_EQ(store.writes.back().filter, R"({"_id":{"$eq":2500}})");
  EXPECT_NE(store.writes.back().update.find(R"("rating.count":1)"), std::string::npos);
}

// --- Incremental mode: the planned deltas, applied by the test server's engine, against the
// values computed from the children directly.

const char* log_count_mapping = R"({"name":"hl","kind":"aggregate","mode":"incremental",
  "source":{"collection":"logmsgs","parentKey":"hostId","filter":{"level":{"$ne":"debug"}}},
  "target":{"collection":"hosts"},"into":"logs",
  "fields":{"count":{"$count":{}},"bytes":{"$sum":"bytes"},"avg":{"$avg":"bytes"}},
  "fillNewTargets":true})";

constexpr int hosts = 4;

// Log messages changing at random, and the change events (with both images) they make.
class log_world {
 public:
  explicit log_world(unsigned seed) : rng_(seed) {}

  std::vector<change_event> events;
  std::map<int, bson::document> children;

  void run(int changes) {
    for (int i = 0; i < changes; ++i)
      step();
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  // A byte count of any numeric type $sum keeps apart, or not a number, or none.
  std::string bytes_json() {
    const int n = pick(2000) + 1;
    switch (pick(7)) {
      case 0:
        return std::to_string(n);
      case 1:
        return R"({"$numberLong":")" + std::to_string(n) + "\"}";
      case 2:
        return R"({"$numberDouble":")" + std::to_string(n) + ".5\"}";
      case 3:
        return R"({"$numberDecimal":")" + std::to_string(n) + "\"}";
      case 4:
        return R"("big")";
      case 5:
        return "";
      default:
        return std::to_string(n);
    }
  }
  bson::document child(int id) {
    std::string json = R"({"_id":)" + std::to_string(id) + R"(,"hostId":)" +
                       std::to_string(pick(hosts) + 1) + R"(,"level":")" +
                       (pick(4) == 0 ? "debug" : "info") + "\"";
    const std::string b = bytes_json();
    if (!b.empty()) json += R"(,"bytes":)" + b;
    return *bson::parse_json(json + "}");
  }
  void emit(operation op, const char* name, int id, const bson::document* before,
            const bson::document* after, std::vector<std::string> touched) {
    ++clock_;
    change_event ev;
    ev.op = op;
    ev.op_name = name;
    ev.source = ns{"shop", "logmsgs"};
    ev.id = bson::value(id);
    if (before != nullptr) ev.full_document_before_change = *before;
    if (after != nullptr) ev.full_document = *after;
    ev.touched = std::move(touched);
    char data[32];
    std::snprintf(data, sizeof data, "82%08X", clock_);
    ev.token = bson::document{{"_data", std::string(data)}};
    ev.cluster_time = bson::timestamp{1000, static_cast<std::uint32_t>(clock_)};
    events.push_back(std::move(ev));
  }
  void step() {
    const int r = pick(10);
    if (r < 4 || children.empty()) {
      const int id = next_id_++;
      children[id] = child(id);
      return emit(operation::insert, "insert", id, nullptr, &children[id], {});
    }
    auto it = std::next(children.begin(), pick(static_cast<int>(children.size())));
    const int id = it->first;
    const bson::document before = it->second;
    bson::document& doc = it->second;
    const bson::document fresh = child(id);
    switch (r) {
      case 4:  // new bytes (or none)
        if (const auto* b = fresh.get("bytes")) {
          doc.set("bytes", *b);
        } else {
          doc.erase("bytes");
        }
        return emit(operation::update, "update", id, &before, &doc, {"bytes"});
      case 5:
        doc.set("hostId", *fresh.get("hostId"));
        return emit(operation::update, "update", id, &before, &doc, {"hostId"});
      case 6:
        doc.set("level", *fresh.get("level"));
        return emit(operation::update, "update", id, &before, &doc, {"level"});
      case 7:
        doc = fresh;
        return emit(operation::replace, "replace", id, &before, &doc, {});
      case 8:
        doc.set("message", "irrelevant");
        return emit(operation::update, "update", id, &before, &doc, {"message"});
      default:
        children.erase(it);
        return emit(operation::delete_, "delete", id, &before, nullptr, {});
    }
  }

  std::mt19937 rng_;
  int clock_ = 0;
  int next_id_ = 1;
};

using host_docs = std::map<int, bson::document>;

host_docs fresh_hosts() {
  host_docs out;
  for (int h = 1; h <= hosts; ++h)
    out[h] = bson::document{{"_id", h}};
  return out;
}

// The children as events[0, to) leave them: what a snapshot read after them sees.
std::vector<bson::document> children_after(const std::vector<change_event>& events,
                                           std::size_t to) {
  std::map<std::int32_t, bson::document> now;
  for (std::size_t i = 0; i < to; ++i) {
    const change_event& ev = events[i];
    if (ev.op == operation::delete_) {
      now.erase(ev.id.as<std::int32_t>());
    } else {
      now[ev.id.as<std::int32_t>()] = *ev.full_document;
    }
  }
  std::vector<bson::document> out;
  for (auto& [id, d] : now)
    out.push_back(std::move(d));
  return out;
}

// A snapshot recompute (the type check after a double or decimal left) as the writer completes
// it: the hosts its filter selects get the values of the test server's $group over the
// children as of the batch's last event, and that snapshot's position.
void apply_recompute(const write_op& op, const std::vector<change_event>& events, std::size_t to,
                     host_docs& docs) {
  const mapping& m = *op.source_mapping;
  const aggregate_kind& k = kind_of(m);
  const auto& rw = std::get<recompute_write>(op.what);
  auto selects = mongo_emulator::engine::compile_query(rw.parents);
  ASSERT_TRUE(selects);
  auto stages = mongo_emulator::engine::parse_pipeline(k.pipeline(rw.keys));
  ASSERT_TRUE(stages) << stages.error().message;
  auto groups = mongo_emulator::engine::run_pipeline(*stages, children_after(events, to));
  ASSERT_TRUE(groups) << groups.error().message;
  const group_index by_key(*groups);
  const bson::document at{{"t", events[to - 1].cluster_time}, {"k", bson::max_key{}}};
  for (auto& [h, d] : docs) {
    if (!selects->matches(d)) continue;
    auto spec =
        mongo_emulator::engine::parse_update(k.update_for(m, by_key.find(bson::value(h)), at), {});
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_TRUE(mongo_emulator::engine::apply_update(*spec, d, {}));
  }
}

// Plans `events[from, to)` in batches of random sizes, coalesces each batch and applies its
// writes to `docs` as the server would.
void apply_events(const planner& p, const std::vector<change_event>& events, std::size_t from,
                  std::size_t to, std::mt19937& rng, host_docs& docs) {
  std::size_t at = from;
  while (at < to) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    std::vector<write_op> ops;
    for (std::size_t i = at; i < std::min(to, at + n); ++i)
      p.plan(events[i], ops);
    at = std::min(to, at + n);
    for (const auto& op : coalesce(std::move(ops))) {
      if (op.as<recompute_write>() != nullptr) {
        apply_recompute(op, events, at, docs);
        continue;
      }
      const auto* w = op.as<update_write>();
      ASSERT_NE(w, nullptr) << to_plan_json(op);  // both images: no letter
      ASSERT_FALSE(w->pipeline.empty());
      const int key = w->filter.get("_id")->as_document().get("$eq")->as<std::int32_t>();
      auto spec = mongo_emulator::engine::parse_pipeline_update(w->pipeline);
      ASSERT_TRUE(spec) << spec.error().message;
      auto applied = mongo_emulator::engine::apply_update(*spec, docs.at(key), {});
      ASSERT_TRUE(applied) << applied.error().message;
    }
  }
}

// Each host's values must be those computed from the children as they are now.
void expect_exact(const log_world& w, const host_docs& docs) {
  for (int h = 1; h <= hosts; ++h) {
    std::int32_t count = 0;
    std::int64_t numbers = 0;
    mongo_emulator::engine::number_sum sum;
    for (const auto& [id, c] : w.children) {
      if (c.get("hostId")->as<std::int32_t>() != h || c.get("level")->as_string() == "debug")
        continue;
      ++count;
      const bson::value* b = c.get("bytes");
      if (b != nullptr && b->is_number()) {
        sum.add(*b);
        ++numbers;
      }
    }
    const bson::document& d = docs.at(h);
    SCOPED_TRACE(bson::to_json(d));
    const bson::value* have_count = d.find_path("logs.count");
    const bson::value* have_bytes = d.find_path("logs.bytes");
    const bson::value* have_avg = d.find_path("logs.avg");
    ASSERT_NE(have_count, nullptr);
    ASSERT_NE(have_bytes, nullptr);
    EXPECT_EQ(bson::compare(*have_count, bson::value(count)), 0);
    EXPECT_EQ(bson::compare(*have_bytes, sum.sum()), 0) << bson::to_json(sum.sum());
    // Of the type a fresh $group gives, whichever children came and went: an int64 or a
    // double that left a sum of int32s leaves an int32 (docs/architecture.md).
    EXPECT_EQ(have_bytes->kind(), sum.sum().kind()) << bson::to_json(sum.sum());
    if (numbers == 0) {
      EXPECT_EQ(have_avg, nullptr);
    } else {
      ASSERT_NE(have_avg, nullptr);
      const double want = sum.average(numbers).to_double();
      EXPECT_NEAR(have_avg->to_double(), want, 1e-9 * std::max(1.0, std::fabs(want)));
      EXPECT_EQ(have_avg->kind(), sum.average(numbers).kind());
    }
  }
}

// Runs `check(planner, world, rng)` on 20 worlds of 300 random changes each.
template <class Check>
void for_each_world(Check&& check) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const planner p(load(log_count_mapping));
    log_world w(seed);
    w.run(300);
    std::mt19937 rng(seed * 7);
    check(p, w, rng);
  }
}

TEST(aggregate_incremental_test, deltas_in_any_batches_are_exact_and_a_replay_changes_nothing) {
  for_each_world([](const planner& p, const log_world& w, std::mt19937& rng) {
    host_docs docs = fresh_hosts();
    apply_events(p, w.events, 0, w.events.size(), rng, docs);
    expect_exact(w, docs);
    // The whole stream again, cut into other batches: every host has seen every event.
    const host_docs before = docs;
    apply_events(p, w.events, 0, w.events.size(), rng, docs);
    EXPECT_EQ(docs, before);
  });
}

// A child of host 1 inserted (`after`) or deleted (`after` empty), as the stream shows it.
change_event child_event(int clock, int id, const std::string& bytes_before,
                         const std::string& bytes_after) {
  change_event ev;
  const auto doc = [&](const std::string& bytes) {
    return *bson::parse_json(R"({"_id":)" + std::to_string(id) +
                             R"(,"hostId":1,"level":"info","bytes":)" + bytes + "}");
  };
  ev.op = bytes_after.empty() ? operation::delete_
                              : (bytes_before.empty() ? operation::insert : operation::update);
  ev.op_name = bytes_after.empty() ? "delete" : (bytes_before.empty() ? "insert" : "update");
  ev.source = ns{"shop", "logmsgs"};
  ev.id = bson::value(id);
  if (!bytes_before.empty()) ev.full_document_before_change = doc(bytes_before);
  if (!bytes_after.empty()) ev.full_document = doc(bytes_after);
  if (ev.op == operation::update) ev.touched = {"bytes"};
  char data[32];
  std::snprintf(data, sizeof data, "82%08X", clock);
  ev.token = bson::document{{"_data", std::string(data)}};
  ev.cluster_time = bson::timestamp{2000, static_cast<std::uint32_t>(clock)};
  return ev;
}

TEST(aggregate_incremental_test, a_running_sum_keeps_the_type_a_fresh_group_gives) {
  // Each step's children, and the type $group's $sum gives them: int32 overflow to int64 and
  // back, an int64, a double and a decimal child coming and going (alone and together), and a
  // double value changing into an int32.
  const std::vector<std::tuple<int, std::string, std::string>> steps = {
      {1, "", "2000000000"},
      {2, "", "2000000000"},                 // 4e9: int64
      {2, "2000000000", ""},                 // 2e9: int32 again
      {3, "", R"({"$numberLong":"5"})"},     // int64
      {3, R"({"$numberLong":"5"})", ""},     // int32
      {4, "", "2.5"},                        // double
      {5, "", "1.5"},                        // double
      {4, "2.5", ""},                        // still double (1.5 is left)
      {5, "1.5", "7"},                       // int32: the last double changed into an int32
      {6, "", R"({"$numberDecimal":"1"})"},  // decimal
      {7, "", "0.5"},                        // decimal
      {6, R"({"$numberDecimal":"1"})", ""},  // double
      {7, "0.5", ""},                        // int32
  };
  for (std::size_t batch = 1; batch <= 3; ++batch) {
    SCOPED_TRACE("batches of " + std::to_string(batch));
    const planner p(load(log_count_mapping));
    std::vector<change_event> events;
    host_docs docs = fresh_hosts();
    std::map<int, bson::value> children;
    int clock = 0;
    for (const auto& [id, before, after] : steps) {
      events.push_back(child_event(++clock, id, before, after));
      if (after.empty()) {
        children.erase(id);
      } else {
        children[id] = *bson::parse_json(R"({"v":)" + after + "}")->get("v");
      }
      if (events.size() % batch != 0 && events.size() != steps.size()) continue;
      std::vector<write_op> ops;
      for (std::size_t i = events.size() - (events.size() - 1) % batch - 1; i < events.size(); ++i)
        p.plan(events[i], ops);
      for (const auto& op : coalesce(std::move(ops))) {
        if (op.as<recompute_write>() != nullptr) {
          apply_recompute(op, events, events.size(), docs);
          continue;
        }
        const auto& w = *op.as<update_write>();
        auto spec = mongo_emulator::engine::parse_pipeline_update(w.pipeline);
        ASSERT_TRUE(spec) << spec.error().message;
        ASSERT_TRUE(mongo_emulator::engine::apply_update(*spec, docs.at(1), {}));
      }
      mongo_emulator::engine::number_sum want;
      for (const auto& [cid, v] : children)
        want.add(v);
      const bson::value* have = docs.at(1).find_path("logs.bytes");
      ASSERT_NE(have, nullptr);
      SCOPED_TRACE("after event " + std::to_string(events.size()) + ": " +
                   bson::to_json(docs.at(1)));
      EXPECT_EQ(bson::compare(*have, want.sum()), 0) << bson::to_json(want.sum());
      EXPECT_EQ(have->kind(), want.sum().kind()) << bson::to_json(want.sum());
    }
  }
}

TEST(aggregate_incremental_test, a_restart_from_an_older_checkpoint_applies_each_event_once) {
  for_each_world([](const planner& p, const log_world& w, std::mt19937& rng) {
    const std::size_t n = w.events.size();
    // Killed after `applied` events were written; the checkpoint was older still.
    const std::size_t applied = std::uniform_int_distribution<std::size_t>(1, n - 1)(rng);
    const std::size_t checkpoint = std::uniform_int_distribution<std::size_t>(0, applied)(rng);
    host_docs docs = fresh_hosts();
    apply_events(p, w.events, 0, applied, rng, docs);
    apply_events(p, w.events, checkpoint, n, rng, docs);
    expect_exact(w, docs);
  });
}

TEST(aggregate_incremental_test,
     a_child_value_is_a_literal_and_an_operator_parent_key_a_dead_letter) {
  const planner p(load(log_count_mapping));
  // A string that would be an expression, and a key that would be a query operator.
  std::vector<write_op> ops;
  p.plan(event(R"({"_id":{"_data":"8201"},"operationType":"insert",
    "clusterTime":{"$timestamp":{"t":5,"i":1}},"ns":{"db":"shop","coll":"logmsgs"},
    "documentKey":{"_id":1},"fullDocument":{"_id":1,"hostId":2,"bytes":7}})"),
         ops);
  ASSERT_EQ(ops.size(), 1u);
  const std::string plan = to_plan_json(ops[0]);
  EXPECT_NE(plan.find(R"({"$literal":7})"), std::string::npos) << plan;
  ops.clear();
  p.plan(event(R"({"_id":{"_data":"8202"},"operationType":"insert",
    "clusterTime":{"$timestamp":{"t":5,"i":2}},"ns":{"db":"shop","coll":"logmsgs"},
    "documentKey":{"_id":2},"fullDocument":{"_id":2,"hostId":{"$ne":null},"bytes":"$bytes"}})"),
         ops);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_NE(ops[0].as<dead_letter_write>(), nullptr);
}

TEST(aggregate_incremental_test, a_snapshot_recompute_stores_its_time_and_guards_the_write) {
  auto ms = load(log_count_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  fake_store store;
  store.add("hosts", R"({"_id":1})");
  store.add("logmsgs", R"({"_id":10,"hostId":1,"level":"info","bytes":4})");
  store.snapshot_at = bson::timestamp{77, 3};
  ASSERT_TRUE(k.complete(m, k.recompute_selected(m, bson::document{}, true), store));
  ASSERT_EQ(store.writes.size(), 1u);
  EXPECT_NE(
      store.writes[0].filter.find(
          R"("logs._denormd.at":{"$lt":{"t":{"$timestamp":{"t":77,"i":3}},"k":{"$maxKey":1}}})"),
      std::string::npos)
      << store.writes[0].filter;
  EXPECT_NE(store.writes[0].update.find(
                R"("logs._denormd.at":{"t":{"$timestamp":{"t":77,"i":3}},"k":{"$maxKey":1}})"),
            std::string::npos)
      << store.writes[0].update;
  EXPECT_NE(store.writes[0].update.find(R"("logs.count":1)"), std::string::npos);
}

// An insert (or delete) of a log message of host `host` (Extended JSON) with `bytes`, at
// cluster time (9, i).
change_event log_event(const char* op, int id, const std::string& host, const std::string& bytes,
                       int i) {
  char data[16];
  std::snprintf(data, sizeof data, "82%04X", i);
  const std::string doc = R"({"_id":)" + std::to_string(id) + R"(,"hostId":)" + host +
                          R"(,"level":"info","bytes":)" + bytes + "}";
  const bool insert = std::string_view(op) == "insert";
  return event(R"({"_id":{"_data":")" + std::string(data) + R"("},"operationType":")" + op +
               R"(","clusterTime":{"$timestamp":{"t":9,"i":)" + std::to_string(i) +
               R"(}},"ns":{"db":"shop","coll":"logmsgs"},"documentKey":{"_id":)" +
               std::to_string(id) + "}," +
               (insert ? R"("fullDocument":)" : R"("fullDocumentBeforeChange":)") + doc + "}");
}

// Plans `events` as one batch, coalesces it and applies its updates to `host` (the parent
// each statement selects, whatever numeric type its key has).
std::vector<write_op> apply_batch(const planner& p, const std::vector<change_event>& events,
                                  bson::document& host) {
  std::vector<write_op> ops;
  for (const auto& ev : events)
    p.plan(ev, ops);
  auto merged = coalesce(std::move(ops));
  for (const auto& op : merged) {
    const auto* w = op.as<update_write>();
    if (w == nullptr) continue;
    const bson::value& key = *w->filter.get("_id")->as_document().get("$eq");
    if (bson::compare(key, *host.get("_id")) != 0) continue;
    auto spec = mongo_emulator::engine::parse_pipeline_update(w->pipeline);
    EXPECT_TRUE(spec) << spec.error().message;
    auto applied = mongo_emulator::engine::apply_update(*spec, host, {});
    EXPECT_TRUE(applied) << applied.error().message;
  }
  return merged;
}

TEST(aggregate_incremental_test, one_parent_under_1_1L_and_1_0_is_one_statement_per_batch) {
  const planner p(load(log_count_mapping));
  const std::string keys[] = {"1", R"({"$numberLong":"1"})", R"({"$numberDouble":"1.0"})"};
  std::vector<change_event> batch;
  for (int i = 0; i < 9; ++i)
    batch.push_back(log_event("insert", 100 + i, keys[i % 3], "10", i + 1));
  bson::document host{{"_id", 1}};
  const auto ops = apply_batch(p, batch, host);
  // One statement: three would share the parent's position, and its guard would drop the
  // events of the second and third that come before the first's last.
  EXPECT_EQ(ops.size(), 1u);
  EXPECT_EQ(bson::compare(*host.find_path("logs.count"), bson::value(9)), 0) << bson::to_json(host);
  EXPECT_EQ(bson::compare(*host.find_path("logs.bytes"), bson::value(90)), 0)
      << bson::to_json(host);
  // The same batch again changes nothing.
  const bson::document before = host;
  apply_batch(p, batch, host);
  EXPECT_EQ(host, before);
}

TEST(aggregate_incremental_test, a_key_changing_from_1_to_1L_stays_with_its_parent) {
  const planner p(load(log_count_mapping));
  bson::document host{{"_id", 1}};
  apply_batch(p, {log_event("insert", 100, "1", "10", 1)}, host);
  // An update that only retypes the key: -1 and +1 to one parent at one position, of which
  // the guard would apply only the first.
  std::vector<write_op> ops;
  const change_event retyped = event(R"({"_id":{"_data":"820002"},"operationType":"update",
    "clusterTime":{"$timestamp":{"t":9,"i":2}},"ns":{"db":"shop","coll":"logmsgs"},
    "documentKey":{"_id":100},"updateDescription":{"updatedFields":{"hostId":{"$numberLong":"1"}},
    "removedFields":[]},
    "fullDocumentBeforeChange":{"_id":100,"hostId":1,"level":"info","bytes":10},
    "fullDocument":{"_id":100,"hostId":{"$numberLong":"1"},"level":"info","bytes":10}})");
  apply_batch(p, {retyped}, host);
  EXPECT_EQ(bson::compare(*host.find_path("logs.count"), bson::value(1)), 0) << bson::to_json(host);
  EXPECT_EQ(bson::compare(*host.find_path("logs.bytes"), bson::value(10)), 0)
      << bson::to_json(host);
}

TEST(aggregate_incremental_test, a_nan_or_infinite_value_recomputes_its_parents) {
  const planner p(load(log_count_mapping));
  for (const char* bad : {R"({"$numberDouble":"NaN"})", R"({"$numberDouble":"-Infinity"})",
                          R"({"$numberDecimal":"Infinity"})", R"({"$numberDecimal":"NaN"})"}) {
    SCOPED_TRACE(bad);
    for (const char* op : {"insert", "delete"}) {
      std::vector<write_op> ops;
      p.plan(log_event(op, 5, "3", bad, 1), ops);
      // NaN - NaN is NaN: a delta could never take it out again.
      ASSERT_EQ(ops.size(), 1u);
      const auto* r = ops[0].as<recompute_write>();
      ASSERT_NE(r, nullptr) << to_plan_json(ops[0]);
      EXPECT_EQ(bson::to_json(r->keys), "[3]");
    }
  }
  // A finite double or decimal is a delta as before.
  std::vector<write_op> ops;
  p.plan(log_event("insert", 5, "3", R"({"$numberDecimal":"1E+400"})", 1), ops);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_NE(ops[0].as<update_write>(), nullptr);
}

TEST(aggregate_incremental_test, the_recompute_after_a_nan_leaves_holds_the_sum_of_the_others) {
  auto ms = load(log_count_mapping);
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  const planner p(ms);
  fake_store store;
  store.add("hosts", R"({"_id":1,"logs":{"count":2,"bytes":{"$numberDouble":"NaN"}}})");
  store.add("logmsgs", R"({"_id":10,"hostId":1,"level":"info","bytes":4})");
  store.snapshot_at = bson::timestamp{77, 3};
  // The NaN child (11) is gone: its delete names its parent, recomputed from the children.
  std::vector<write_op> ops;
  p.plan(log_event("delete", 11, "1", R"({"$numberDouble":"NaN"})", 1), ops);
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_TRUE(k.complete(m, ops[0], store));
  ASSERT_EQ(store.writes.size(), 1u);
  EXPECT_NE(store.writes[0].update.find(R"("logs.bytes":4)"), std::string::npos)
      << store.writes[0].update;
  EXPECT_NE(store.writes[0].update.find(R"("logs.count":1)"), std::string::npos)
      << store.writes[0].update;
}

// A replace event of host 1 on the parents' stream, with its images' positions.
change_event host_replaced(const std::string& before_at, const std::string& after_at) {
  auto doc = [](const std::string& at) {
    return R"({"_id":1,"name":"h","logs":{"count":5)" +
           (at.empty() ? std::string() : R"(,"_denormd":{"at":)" + at + "}") + "}}";
  };
  std::string json = R"({"_id":{"_data":"8203"},"operationType":"replace",
    "clusterTime":{"$timestamp":{"t":20,"i":1}},"ns":{"db":"shop","coll":"hosts"},
    "documentKey":{"_id":1},"fullDocument":)" +
                     doc(after_at);
  if (before_at != "none") json += R"(,"fullDocumentBeforeChange":)" + doc(before_at);
  return event(json + "}");
}

TEST(aggregate_incremental_test, a_parent_replaced_by_the_application_is_recomputed) {
  const planner p(load(log_count_mapping));
  // The parents' stream asks for pre-images: they tell our writes from the application's.
  EXPECT_TRUE(p.needs_images(ns{"shop", "hosts"}).before);
  const std::string p5 = R"({"t":{"$timestamp":{"t":5,"i":1}},"k":"8205"})";
  const std::string p7 = R"({"t":{"$timestamp":{"t":7,"i":1}},"k":"8207"})";
  auto planned = [&](const change_event& ev) {
    std::vector<write_op> ops;
    p.plan(ev, ops);
    return ops;
  };
  // Our own write (a delta or a recompute, logged as a replacement) moves the position on.
  EXPECT_TRUE(planned(host_replaced(p5, p7)).empty());
  EXPECT_TRUE(planned(host_replaced("", p7)).size() == 1u);  // a first position: recomputed
  // The application wrote back what it read: the same position, or an older one.
  for (const auto& [before, after] : std::vector<std::pair<std::string, std::string>>{
           {p7, p5}, {p7, p7}, {p7, ""}, {"none", p7}}) {
    SCOPED_TRACE(before + " -> " + after);
    const auto ops = planned(host_replaced(before, after));
    ASSERT_EQ(ops.size(), 1u);
    const auto* r = ops[0].as<recompute_write>();
    ASSERT_NE(r, nullptr) << to_plan_json(ops[0]);
    EXPECT_EQ(bson::to_json(r->parents), R"({"_id":{"$eq":1}})");
  }
}

TEST(aggregate_incremental_test, deltas_skip_a_parent_whose_key_field_is_an_array) {
  const planner p(load(R"({"name":"hl","kind":"aggregate","mode":"incremental",
    "source":{"collection":"logmsgs","parentKey":"hostName"},
    "target":{"collection":"hosts","key":"name"},"into":"logs",
    "fields":{"count":{"$count":{}}},"fillNewTargets":true})"));
  std::vector<write_op> ops;
  p.plan(event(R"({"_id":{"_data":"8201"},"operationType":"insert",
    "clusterTime":{"$timestamp":{"t":5,"i":1}},"ns":{"db":"shop","coll":"logmsgs"},
    "documentKey":{"_id":1},"fullDocument":{"_id":1,"hostName":"a"}})"),
         ops);
  ASSERT_EQ(ops.size(), 1u);
  // A host named ["a", "b"] would take the deltas of "a" and of "b": two statements on one
  // parent in a batch. It references nothing, as in a recompute.
  EXPECT_EQ(bson::to_json(ops[0].as<update_write>()->filter),
            R"({"name":{"$eq":"a","$not":{"$type":"array"}}})");
}

}  // namespace
// An incremental sum built by $inc from doubles holds them at 15 digits where the recomputed
// $group sum converts them at 34 (MongoDB does both): decimals, too, may differ by rounding.
TEST(aggregate_kind_test, incremental_decimal_sums_may_differ_by_their_rounding) {
  auto ms = load(log_count_mapping);
  const auto& m = ms.front();
  const auto group = *bson::parse_json(
      R"({"_id":9,"v0":2,"v1":{"$numberDecimal":"319.6000000000000014210854715202004"},)"
      R"("v2":{"$numberDecimal":"159.8000000000000007105427357601002"}})");
  const auto parent = *bson::parse_json(
      R"({"_id":9,"logs":{"count":2,"bytes":{"$numberDecimal":"319.6000000000000"},)"
      R"("avg":{"$numberDecimal":"159.8000000000000"}}})");
  EXPECT_TRUE(kind_of(m).check(m, parent, &group).empty());
  const auto off =
      *bson::parse_json(R"({"_id":9,"logs":{"count":2,"bytes":{"$numberDecimal":"319.7"},)"
                        R"("avg":{"$numberDecimal":"159.8000000000000"}}})");
  EXPECT_EQ(kind_of(m).check(m, off, &group), std::vector<std::string>{"logs.bytes"});
  // Integers have no rounding: 7 and 8 stay different whatever their types.
  const auto ints = *bson::parse_json(R"({"_id":9,"v0":2,"v1":{"$numberLong":"8"},"v2":4})");
  const auto seven = *bson::parse_json(R"({"_id":9,"logs":{"count":2,"bytes":7,"avg":4}})");
  EXPECT_EQ(kind_of(m).check(m, seven, &ints), std::vector<std::string>{"logs.bytes"});
}

}  // namespace denormd::mapping
