#include "ops/commands/orphan_sweep.h"

#include <gtest/gtest.h>

#include "../test_mappings.h"
#include "mapping/write_op.h"

namespace denormd::ops {
namespace {

using testing::doc;

const char* unset_customer = R"({"name":"orders-customer","kind":"copy",
  "source":{"collection":"customers"},
  "target":{"collection":"orders","key":"customerId","where":{"status":{"$ne":"DELIVERED"}}},
  "into":"customer","fields":{"name":"name","city":"address.city"},"onSourceDelete":"unset"})";

const char* unset_product = R"({"name":"orders-items-product","kind":"copy",
  "source":{"collection":"products"},
  "target":{"collection":"orders","array":"items","key":"productId"},
  "into":"product","fields":{"title":"title"},"onSourceDelete":"unset"})";

mapping::planner planner_of(const char* json) {
  std::vector<mapping::mapping> ms;
  ms.push_back(testing::load_one(json));
  return mapping::planner(std::move(ms));
}

// Sources by _id: those listed exist, every other key is gone.
mapping::source_lookup existing(const std::vector<bson::document>& docs) {
  return [&docs](const bson::value& key) -> const bson::document* {
    for (const auto& d : docs) {
      if (bson::compare(*d.get("_id"), key) == 0) return &d;
    }
    return nullptr;
  };
}

TEST(ops_orphan_sweep_test, only_copy_mappings_that_unset_on_delete_are_swept) {
  EXPECT_NE(orphan_sweep::kind_of(testing::load_one(unset_customer)), nullptr);
  EXPECT_EQ(orphan_sweep::kind_of(testing::load_one(testing::customer_copy)), nullptr);  // keep
  EXPECT_EQ(orphan_sweep::kind_of(testing::load_one(testing::recent_reviews)), nullptr);
}

TEST(ops_orphan_sweep_test, walks_the_targets_inside_where_that_hold_a_copy) {
  const auto p = planner_of(unset_customer);
  const auto& m = p.mappings().front();
  const orphan_sweep sweep(p, m, *orphan_sweep::kind_of(m));
  EXPECT_EQ(sweep.filter(std::nullopt), doc(R"({"$and":[{"status":{"$ne":"DELIVERED"}},
                   {"$or":[{"customer.name":{"$exists":true}},{"customer.city":{"$exists":true}}]}]})"));
  const bson::document after = sweep.filter(bson::value(5));
  ASSERT_TRUE(after.get("$and") != nullptr);
  const auto& all = after.get("$and")->as_array();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].as_document(), mapping::after_key_filter(bson::value(5)));

  const auto a = planner_of(unset_product);
  const auto& am = a.mappings().front();
  EXPECT_EQ(orphan_sweep(a, am, *orphan_sweep::kind_of(am)).filter(std::nullopt),
            doc(R"({"items.product.title":{"$exists":true}})"));
}

TEST(ops_orphan_sweep_test, unsets_only_the_copies_of_missing_sources_narrowed_to_the_target) {
  const auto p = planner_of(unset_customer);
  const auto& m = p.mappings().front();
  const orphan_sweep sweep(p, m, *orphan_sweep::kind_of(m));
  const std::vector<bson::document> sources{doc(R"({"_id":8,"name":"Bo"})")};
  const std::vector<bson::document> targets{
      doc(R"({"_id":1,"customerId":7,"customer":{"name":"Ann","city":"Oslo"}})"),  // gone: unset
      doc(R"({"_id":2,"customerId":8,"customer":{"name":"Old"}})"),    // exists: phase one's
      doc(R"({"_id":3,"customerId":7})"),                              // gone, nothing to unset
      doc(R"({"_id":4,"customerId":[7],"customer":{"name":"Ann"}})"),  // not a reference
      doc(R"({"_id":5,"customerId":7,"customer":{"city":"Oslo"}})"),   // gone: unset
  };
  const auto planned = sweep.plan(targets, existing(sources));
  EXPECT_EQ(planned.targets, 2u);
  EXPECT_EQ(planned.keys, (bson::array{bson::value(7)}));
  ASSERT_EQ(planned.ops.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto* w = planned.ops[i].as<mapping::update_write>();
    ASSERT_NE(w, nullptr);
    EXPECT_FALSE(w->many);
    EXPECT_EQ(*w->filter.get("_id"), bson::value(mapping::literal(bson::value(i == 0 ? 1 : 5))));
    // Still on the key and the where: a target re-keyed or moved out since is not touched.
    EXPECT_EQ(*w->filter.get("customerId"),
              bson::value(mapping::key_match("customerId", bson::value(7))));
    EXPECT_NE(w->filter.get("status"), nullptr);
    EXPECT_EQ(w->update, doc(R"({"$unset":{"customer.name":"","customer.city":""}})"));
  }
}

TEST(ops_orphan_sweep_test, unsets_the_elements_whose_source_is_gone) {
  const auto p = planner_of(unset_product);
  const auto& m = p.mappings().front();
  const orphan_sweep sweep(p, m, *orphan_sweep::kind_of(m));
  const std::vector<bson::document> sources{doc(R"({"_id":8,"title":"Desk"})")};
  const std::vector<bson::document> targets{doc(
      R"({"_id":1,"items":[{"productId":7,"product":{"title":"Lamp"}},
                          {"productId":8,"product":{"title":"Desk"}},{"productId":9}]})")};
  const auto planned = sweep.plan(targets, existing(sources));
  EXPECT_EQ(planned.targets, 1u);
  EXPECT_EQ(planned.keys, (bson::array{bson::value(7)}));  // 9 is gone too, but has no copy
  ASSERT_EQ(planned.ops.size(), 1u);
  const auto* w = planned.ops[0].as<mapping::update_write>();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(*w->filter.get("_id"), bson::value(mapping::literal(bson::value(1))));
  EXPECT_EQ(w->update, doc(R"({"$unset":{"items.$[e].product.title":""}})"));
  ASSERT_EQ(w->array_filters.size(), 1u);
  EXPECT_EQ(*w->array_filters[0].as_document().get("e.productId"),
            bson::value(mapping::key_match("productId", bson::value(7))));
}

}  // namespace
}  // namespace denormd::ops
