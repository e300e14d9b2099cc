#include "mapping/recent_kind.h"

#include <gtest/gtest.h>

#include "fake_store.h"
#include "mapping/write_op.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::fake_store;
using testing::load;

const recent_kind& kind_of(const mapping& m) {
  return std::get<recent_kind>(m.kind);
}

TEST(recent_kind_test, element_uses_projection_names_and_nests_dotted_ones) {
  auto ms = load(testing::review_mapping);
  const auto& k = kind_of(ms.front());
  auto child = bson::parse_json(R"({"_id":1,"at":2,"stars":5,"other":0})");
  EXPECT_EQ(bson::to_json(k.element(ms.front(), *child)), R"({"id":1,"at":2,"meta":{"stars":5}})");
  auto partial = bson::parse_json(R"({"_id":1})");
  EXPECT_EQ(bson::to_json(k.element(ms.front(), *partial)), R"({"id":1})");
  EXPECT_EQ(bson::to_json(k.child_sort(ms.front())), R"({"at":-1,"_id":1})");
}

// Verify under "pull": the ids of the array, to read those children again; nullopt when the
// array cannot be what pull keeps (review_mapping keeps at most 2).
TEST(recent_kind_test, held_ids_are_the_arrays_ids_or_nothing_when_it_cannot_be_one_pull_keeps) {
  auto ms = load(testing::review_mapping);
  const auto& m = ms.front();
  auto held = [&](const std::string& parent) {
    auto ids = kind_of(m).held_ids(m, *bson::parse_json(parent));
    return ids ? bson::to_json(*ids) : std::string("none");
  };
  EXPECT_EQ(held(R"({"_id":1})"), "[]");
  EXPECT_EQ(held(R"({"_id":1,"recent":[]})"), "[]");
  EXPECT_EQ(held(R"({"_id":1,"recent":[{"id":5,"at":1},{"id":3}]})"), "[5,3]");
  EXPECT_EQ(held(R"({"_id":1,"recent":[{"id":5},{"id":5.0}]})"), "none");         // twice
  EXPECT_EQ(held(R"({"_id":1,"recent":[{"id":1},{"id":2},{"id":3}]})"), "none");  // > limit
  EXPECT_EQ(held(R"({"_id":1,"recent":[{"at":1}]})"), "none");
  EXPECT_EQ(held(R"({"_id":1,"recent":[{"id":[1]}]})"), "none");
  EXPECT_EQ(held(R"({"_id":1,"recent":{"id":1}})"), "none");
}

TEST(recent_kind_test, refill_carries_the_mappings_children_query) {
  auto ms = load(R"({"name":"rr","kind":"recent",
    "source":{"collection":"reviews","parentKey":"productId","filter":{"hidden":{"$ne":true}}},
    "target":{"collection":"products"},"into":"recent","fields":{"id":"_id","s":"stars"},
    "idField":"id","sort":{"s":-1},"limit":3})");
  const auto& m = ms.front();
  const auto op = kind_of(m).refill(m, *bson::parse_json(R"({"_id":{"$in":[1,2]}})"),
                                    merge_rule::mapping_barrier);
  EXPECT_EQ(op.name(), "refill");
  EXPECT_EQ(op.source_mapping, &m);
  EXPECT_EQ(op.target.full(), "shop.products");
  ASSERT_NE(op.as<refill_write>(), nullptr);
  const refill_query& children = op.as<refill_write>()->children;
  EXPECT_EQ(bson::to_json(op.as<refill_write>()->parents), R"({"_id":{"$in":[1,2]}})");
  EXPECT_EQ(children.source.full(), "shop.reviews");
  EXPECT_EQ(bson::to_json(children.filter), R"({"hidden":{"$ne":true}})");
  EXPECT_EQ(children.parent_key, "productId");
  EXPECT_EQ(children.parent_field, "_id");
  EXPECT_EQ(bson::to_json(children.sort), R"({"stars":-1,"_id":1})");
  EXPECT_EQ(children.limit, 3);
}

TEST(recent_kind_test, completing_a_refill_sets_each_parents_array_from_its_children) {
  auto ms = load(testing::review_mapping);
  const auto& m = ms.front();
  fake_store store;
  store.add("products", R"({"_id":1})");
  store.add("products", R"({"_id":2})");
  store.add("products", R"({"_id":{"$gt":0}})");  // cannot be named by any child: left alone
  store.add("reviews", R"({"_id":10,"productId":1,"at":5,"stars":4})");
  store.add("reviews", R"({"_id":11,"productId":2,"at":6,"stars":1})");
  const auto op = kind_of(m).refill(m, bson::document{}, merge_rule::mapping_barrier);
  ASSERT_TRUE(kind_of(m).complete(m, op, store));
  ASSERT_EQ(store.writes.size(), 2u);
  EXPECT_EQ(store.writes[0].filter, R"({"_id":{"$eq":1}})");
  EXPECT_EQ(store.writes[0].update, R"({"$set":{"recent":[{"id":10,"at":5,"meta":{"stars":4}}]}})");
  EXPECT_EQ(store.writes[1].update, R"({"$set":{"recent":[{"id":11,"at":6,"meta":{"stars":1}}]}})");
  EXPECT_EQ(store.last_sort, R"({"at":-1,"_id":1})");
  EXPECT_EQ(store.last_limit, 2);
}

TEST(recent_kind_test, a_failed_read_or_write_stops_the_refill) {
  auto ms = load(testing::review_mapping);
  const auto& m = ms.front();
  const auto op = kind_of(m).refill(m, bson::document{}, merge_rule::mapping_barrier);
  for (int calls = 0; calls < 3; ++calls) {
    fake_store store;
    store.add("products", R"({"_id":1})");
    store.add("reviews", R"({"_id":10,"productId":1,"at":5})");
    store.fail_after(calls);  // parents, children, write
    EXPECT_FALSE(kind_of(m).complete(m, op, store)) << calls;
    EXPECT_TRUE(store.writes.empty());
  }
}

// A child pushed by the stream between a backfill's read and its write would be lost by the
// write; with recheck the refill reads again and writes again until what it wrote holds.
TEST(recent_kind_test, a_rechecked_refill_writes_again_until_the_children_are_what_it_wrote) {
  auto ms = load(testing::review_mapping);
  const auto& m = ms.front();
  for (const bool recheck : {false, true}) {
    fake_store store;
    store.add("products", R"({"_id":1})");
    store.add("reviews", R"({"_id":10,"productId":1,"at":5})");
    store.after_first_write = [&] { store.add("reviews", R"({"_id":11,"productId":1,"at":6})"); };
    auto op = kind_of(m).refill(m, bson::document{}, merge_rule::mapping_barrier);
    op.as<refill_write>()->recheck = recheck;
    ASSERT_TRUE(kind_of(m).complete(m, op, store));
    if (!recheck) {
      EXPECT_EQ(store.writes.size(), 1u);  // the stream's own refill covers this case
      continue;
    }
    ASSERT_EQ(store.writes.size(), 2u);
    EXPECT_EQ(store.writes[1].update, R"({"$set":{"recent":[{"id":10,"at":5},{"id":11,"at":6}]}})");
    EXPECT_EQ(store.finds, 4);  // parents, children, children again (changed), and once more
  }
}

// A rechecked refill stops once the children are what it wrote, NaN included (it used to
// write for ever; the store fails after a few calls to end the test).
TEST(recent_kind_test, a_rechecked_refill_of_a_child_holding_nan_writes_once) {
  auto ms = load(testing::review_mapping);
  const auto& m = ms.front();
  fake_store store;
  store.add("products", R"({"_id":1})");
  store.add("reviews", R"({"_id":10,"productId":1,"at":{"$numberDouble":"NaN"}})");
  store.fail_after(20);
  auto op = kind_of(m).refill(m, bson::document{}, merge_rule::mapping_barrier);
  op.as<refill_write>()->recheck = true;
  ASSERT_TRUE(kind_of(m).complete(m, op, store));
  EXPECT_EQ(store.writes.size(), 1u);
}

}  // namespace
}  // namespace denormd::mapping
