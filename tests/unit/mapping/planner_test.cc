#include "mapping/planner.h"

#include <gtest/gtest.h>

#include "mapping/coalescer.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::event;
using testing::load;

TEST(planner_test, lists_source_namespaces_once) {
  auto ms = load(testing::customer_mapping);
  auto more = load(R"({"name":"x","kind":"copy","source":{"collection":"customers"},
    "target":{"collection":"invoices","key":"c"},"fields":{"n":"name"}})");
  ms.push_back(std::move(more.front()));
  const planner p(std::move(ms));
  EXPECT_EQ(p.source_namespaces(), (std::vector<ns>{{"shop", "customers"}}));
}

TEST(planner_test, a_delete_without_the_key_explains_itself) {
  const planner p(load(R"({"name":"k","kind":"copy","source":{"collection":"p","key":"sku"},
    "target":{"collection":"l","key":"sku"},"fields":{"t":"t"},"onSourceDelete":"unset"})"));
  std::vector<write_op> ops;
  std::vector<std::string> notes;
  p.plan(event(R"({"_id":{"_data":"1"},"operationType":"delete","ns":{"db":"shop","coll":"p"},
    "documentKey":{"_id":1}})"),
         ops, &notes);
  EXPECT_TRUE(ops.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("pre-images"), std::string::npos);
}

TEST(planner_test, events_of_other_namespaces_plan_nothing) {
  const planner p(load(testing::customer_mapping));
  std::vector<write_op> ops;
  p.plan(
      event(R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"other","coll":"customers"},
    "documentKey":{"_id":1},"fullDocument":{"_id":1,"name":"x"}})"),
      ops);
  EXPECT_TRUE(ops.empty());
}

// Two mappings reading customers: oc (copy into orders) and x (copy into invoices).
std::vector<mapping> two_customer_mappings(const std::string& x_field = "name") {
  auto ms = load(testing::customer_mapping);
  auto more = load(R"({"name":"x","kind":"copy","source":{"collection":"customers"},
    "target":{"collection":"invoices","key":"c"},"fields":{"n":")" +
                   x_field + R"("}})");
  ms.push_back(std::move(more.front()));
  return ms;
}

change_event rename_at(const std::string& data) {
  return event(R"({"_id":{"_data":")" + data +
               R"("},"operationType":"update","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":1},"updateDescription":{"updatedFields":{"name":"N"},"removedFields":[]},
    "fullDocument":{"_id":1,"name":"N"}})");
}

TEST(planner_test, a_namespace_signature_changes_with_its_mappings_only) {
  const planner both(two_customer_mappings());
  const planner same(two_customer_mappings());
  const planner changed(two_customer_mappings("email"));
  const planner one(load(testing::customer_mapping));
  const ns customers{"shop", "customers"};
  EXPECT_EQ(both.stream_signature(customers), same.stream_signature(customers));
  EXPECT_NE(both.stream_signature(customers), changed.stream_signature(customers));
  EXPECT_NE(both.stream_signature(customers), one.stream_signature(customers));
  EXPECT_EQ(both.stream_signature({"shop", "orders"}), "");  // not watched
  EXPECT_EQ(both.mappings_reading(customers), (std::vector<std::string>{"oc", "x"}));
  // A fillNewTargets mapping reads its target too.
  const planner fills(load(R"({"name":"f","kind":"copy","source":{"collection":"customers"},
    "target":{"collection":"orders","key":"customerId"},"into":"c","fields":{"n":"name"},
    "fillNewTargets":true})"));
  EXPECT_EQ(fills.mappings_reading({"shop", "orders"}), (std::vector<std::string>{"f"}));
  EXPECT_NE(fills.stream_signature({"shop", "orders"}), "");
}

TEST(planner_test, a_replay_gate_lets_each_mapping_take_only_what_it_has_not_applied) {
  const planner p(two_customer_mappings());
  // x was put back after it stopped at "b"; oc has applied everything up to "d".
  const replay_gate gate{"d", {{"x", "b"}}};
  auto targets = [&](const std::string& at) {
    std::vector<write_op> ops;
    p.plan(rename_at(at), ops, nullptr, &gate);
    std::vector<std::string> out;
    for (const auto& op : ops)
      out.push_back(op.source_mapping->name);
    return out;
  };
  EXPECT_EQ(targets("c"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(targets("d"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(targets("e"), (std::vector<std::string>{"oc", "x"}));
  EXPECT_FALSE(gate.passed("c"));
  EXPECT_FALSE(gate.passed("d"));
  EXPECT_TRUE(gate.passed("e"));
  EXPECT_FALSE((replay_gate{"b", {{"x", "d"}}}.passed("c")));  // x still holds back
  std::vector<write_op> all;
  p.plan(rename_at("a"), all);  // no gate: every mapping
  EXPECT_EQ(all.size(), 2u);
}

TEST(set_path_test, creates_and_replaces_intermediate_documents) {
  bson::document d{{"a", 1}};
  set_path(d, "b.c.d", 2);
  set_path(d, "a.x", 3);  // a scalar in the way is replaced by a document
  EXPECT_EQ(bson::to_json(d), R"({"a":{"x":3},"b":{"c":{"d":2}}})");
}

// The batch step must not change the result: copy ops for one key collapse to the last,
// pushes merge only while nothing else touched that parent, other mappings are untouched.
TEST(coalescer_test, keeps_order_between_barriers) {
  auto ms = load(testing::review_mapping);
  auto cs = load(testing::customer_mapping);
  ms.push_back(std::move(cs.front()));
  const planner p(std::move(ms));
  std::vector<write_op> ops;
  auto insert = [&](int id, int parent, int at) {
    p.plan(
        event(R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"shop","coll":"reviews"},
      "documentKey":{"_id":)" +
              std::to_string(id) + R"(},"fullDocument":{"_id":)" + std::to_string(id) +
              R"(,"productId":)" + std::to_string(parent) + R"(,"at":)" + std::to_string(at) +
              "}}"),
        ops);
  };
  insert(1, 10, 1);
  insert(2, 10, 2);
  p.plan(event(R"({"_id":{"_data":"2"},"operationType":"delete","ns":{"db":"shop","coll":"reviews"},
      "documentKey":{"_id":9}})"),
         ops);  // a refill of unknown parents: a barrier for every parent of the mapping
  insert(3, 10, 3);
  insert(4, 11, 4);
  insert(5, 10, 5);
  ASSERT_EQ(ops.size(), 6u);
  auto merged = coalesce(std::move(ops));
  std::vector<std::string> shape;
  for (const auto& op : merged) {
    const auto* w = op.as<update_write>();
    shape.push_back(std::string(op.name()) + ":" +
                    (w == nullptr || w->update.empty() ? "" : w->update.fields().front().name) +
                    ":" + (w != nullptr && w->push ? std::to_string(w->push->ids.size()) : "-"));
  }
  EXPECT_EQ(shape, (std::vector<std::string>{"updateOne:$pull:-", "updateOne:$push:2", "refill::-",
                                             "updateOne:$pull:-", "updateOne:$push:2",
                                             "updateOne:$push:1"}));
}

TEST(coalescer_test, a_parent_is_one_parent_under_1_1L_and_1_0) {
  const planner p(load(testing::review_mapping));
  std::vector<write_op> ops;
  auto insert = [&](int id, const std::string& parent) {
    p.plan(
        event(R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"shop","coll":"reviews"},
      "documentKey":{"_id":)" +
              std::to_string(id) + R"(},"fullDocument":{"_id":)" + std::to_string(id) +
              R"(,"productId":)" + parent + R"(,"at":)" + std::to_string(id) + "}}"),
        ops);
  };
  insert(1, "10");
  insert(2, R"({"$numberLong":"10"})");
  insert(3, R"({"$numberDouble":"10.0"})");
  // One parent, so one merged push (a pull of the three ids, then the push).
  auto merged = coalesce(std::move(ops));
  ASSERT_EQ(merged.size(), 2u);
  ASSERT_TRUE(merged[1].as<update_write>()->push);
  EXPECT_EQ(merged[1].as<update_write>()->push->ids.size(), 3u);
}

TEST(coalescer_test, copy_ops_collapse_per_source_document_only) {
  const planner p(load(testing::customer_mapping));
  std::vector<write_op> ops;
  for (const char* name : {"a", "b", "c"}) {
    p.plan(
        event(
            std::string(
                R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"shop","coll":"customers"},
      "documentKey":{"_id":1},"updateDescription":{"updatedFields":{"name":"x"}},
      "fullDocument":{"_id":1,"name":")") +
            name + "\"}}"),
        ops);
  }
  p.plan(
      event(R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"shop","coll":"customers"},
      "documentKey":{"_id":1.0},"updateDescription":{"updatedFields":{"name":"x"}},
      "fullDocument":{"_id":1.0,"name":"d"}})"),
      ops);
  auto merged = coalesce(std::move(ops));
  // 1 and 1.0 are one source document (one _id) whose updates select the same targets
  // ({$eq: 1} matches both): the last wins.
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(bson::to_json(std::get<update_write>(merged[0].what).update),
            R"({"$set":{"customer.name":"d"},"$unset":{"customer.city":""}})");
}

}  // namespace
}  // namespace denormd::mapping
