#include "mapping/aggregate_kind.h"

#include <gtest/gtest.h>

#include "config/mapping_loader.h"
#include "fake_store.h"
#include "mapping/coalescer.h"
#include "mapping/planner.h"
#include "mapping/write_op.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

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
  EXPECT_TRUE(p.needs_pre_images(ns{"shop", "reviews"}));
  EXPECT_FALSE(p.needs_pre_images(ns{"shop", "products"}));
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
                .find("/mode: \"incremental\" is not available"),
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
  // check() compares types too: an int32 7 where the sum is an int64 is drift.
  const auto parent =
      *bson::parse_json(R"({"_id":9,"rating":{"count":2,"sum":7,"avg":3.5,"min":2,"max":5}})");
  EXPECT_EQ(k.check(m, parent, &group), std::vector<std::string>{"rating.sum"});
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

}  // namespace
}  // namespace denormd::mapping
