#include "mapping/copy_kind.h"

#include <gtest/gtest.h>

#include "fake_store.h"
#include "mapping/change_event.h"
#include "mapping/write_op.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::event;
using testing::fake_store;
using testing::load;

const copy_kind& kind_of(const mapping& m) {
  return std::get<copy_kind>(m.kind);
}

// The fill a new order needs (by default order 1, with customerId 7).
write_op fill_of(const mapping& m, int order = 1, const std::string& customer = "7") {
  std::vector<write_op> out;
  const auto& k = kind_of(m);
  const std::string id = std::to_string(order);
  k.plan_new_target(
      m, k.fill_paths(),
      event(R"({"_id":{"t":1},"operationType":"insert",
                      "ns":{"db":"shop","coll":"orders"},"documentKey":{"_id":)" +
            id + R"(},"fullDocument":{"_id":)" + id + R"(,"customerId":)" + customer + "}}"),
      out);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? write_op{} : out.front();
}

// The filter of the fill of `order` naming `customer`: that order, while it names that key.
std::string filter_of(int order, const std::string& customer) {
  return R"({"_id":{"$eq":)" + std::to_string(order) + R"(},"customerId":{"$eq":)" + customer +
         R"(,"$not":{"$type":"array"}}})";
}

std::vector<const write_op*> pointers(const std::vector<write_op>& ops) {
  std::vector<const write_op*> out;
  for (const auto& op : ops)
    out.push_back(&op);
  return out;
}

TEST(copy_kind_test, update_for_sets_present_fields_and_unsets_missing_ones) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  const auto source = bson::parse_json(R"({"_id":7,"name":"Ann"})");
  EXPECT_EQ(bson::to_json(kind_of(m).update_for(m, &*source)),
            R"({"$set":{"customer.name":"Ann"},"$unset":{"customer.city":""}})");
  EXPECT_EQ(bson::to_json(kind_of(m).update_for(m, nullptr)),
            R"({"$unset":{"customer.name":"","customer.city":""}})");
}

TEST(copy_kind_test, completing_a_fill_copies_the_source_once_when_it_stays_the_same) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  const write_op op = fill_of(m);
  fake_store store;
  store.add("customers", R"({"_id":7,"name":"Ann","address":{"city":"Oslo"}})");
  ASSERT_TRUE(kind_of(m).complete(m, op, store));
  ASSERT_EQ(store.writes.size(), 1u);
  EXPECT_EQ(store.writes[0].filter, filter_of(1, "7"));
  EXPECT_EQ(store.writes[0].update, R"({"$set":{"customer.name":"Ann","customer.city":"Oslo"}})");
  EXPECT_EQ(store.finds, 2);  // read, write, read again: unchanged
}

TEST(copy_kind_test, a_source_changed_between_read_and_write_is_written_again) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  fake_store store;
  store.add("customers", R"({"_id":7,"name":"Ann"})");
  store.after_first_read = [&] { store.replace_all("customers", R"({"_id":7,"name":"Bo"})"); };
  ASSERT_TRUE(kind_of(m).complete(m, fill_of(m), store));
  ASSERT_EQ(store.writes.size(), 2u);
  EXPECT_EQ(store.writes[1].update,
            R"({"$set":{"customer.name":"Bo"},"$unset":{"customer.city":""}})");
}

// The fill reads its source again after writing, until what it wrote is current: a copied
// NaN is (it used to write for ever; the store fails after a few calls to end the test).
TEST(copy_kind_test, a_source_holding_nan_is_written_once) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  fake_store store;
  store.add("customers", R"({"_id":7,"name":{"$numberDouble":"NaN"}})");
  store.fail_after(20);
  ASSERT_TRUE(kind_of(m).complete(m, fill_of(m), store));
  EXPECT_EQ(store.writes.size(), 1u);
}

TEST(copy_kind_test, no_source_means_no_write_and_a_failed_call_stops_the_fill) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  fake_store empty;
  ASSERT_TRUE(kind_of(m).complete(m, fill_of(m), empty));
  EXPECT_TRUE(empty.writes.empty());
  for (int calls = 0; calls < 3; ++calls) {
    fake_store store;
    store.add("customers", R"({"_id":7,"name":"Ann"})");
    store.fail_after(calls);  // read, write, read again
    EXPECT_FALSE(kind_of(m).complete(m, fill_of(m), store)) << calls;
  }
}

// A fill planned for an order that names customer 7, completed after the order was re-keyed
// to customer 8 (a replay, or a later event of its batch): it writes only while the order
// still names 7, so that customer 7's copy never lands in an order of customer 8.
TEST(copy_kind_test, a_fill_writes_only_a_target_that_still_names_its_key) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  EXPECT_EQ(bson::to_json(std::get<fill_write>(fill_of(m).what).filter), filter_of(1, "7"));
}

// Under "unset" (or for a key new to the target) a fill without a source unsets the copies
// the target holds: they are no source's now. Otherwise it writes nothing.
TEST(copy_kind_test, a_fill_without_a_source_unsets_the_copies_when_it_says_so) {
  auto ms = load(R"({"name":"oc","kind":"copy",
    "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
    "into":"customer","fields":{"name":"name"},"onSourceDelete":"unset","fillNewTargets":true})");
  const auto& m = ms.front();
  const write_op op = fill_of(m);
  ASSERT_TRUE(std::get<fill_write>(op.what).unset_without_source);
  fake_store store;
  ASSERT_TRUE(kind_of(m).complete(m, op, store));
  ASSERT_EQ(store.writes.size(), 1u);
  EXPECT_EQ(store.writes[0].update, R"({"$unset":{"customer.name":""}})");
  // Under "keep" an inserted target keeps what it was written with.
  auto keep = load(testing::customer_mapping);
  const write_op kept = fill_of(keep.front());
  EXPECT_FALSE(std::get<fill_write>(kept.what).unset_without_source);
}

// Under "keep", an update that re-keys a target to a source that does not exist unsets its
// old source's copy; one that brings it back into `where` with its key unchanged keeps it.
TEST(copy_kind_test, under_keep_only_a_rekeyed_target_loses_its_copy_without_a_source) {
  auto ms = load(R"({"name":"oc","kind":"copy",
    "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId",
    "where":{"status":"PAID"}},"into":"customer","fields":{"name":"name"},"fillNewTargets":true})");
  const auto& m = ms.front();
  const auto& k = kind_of(m);
  auto plan = [&](const std::string& updated, const std::string& before) {
    std::vector<write_op> out;
    k.plan_new_target(m, k.fill_paths(),
                      event(R"({"_id":{"t":1},"operationType":"update",
                      "ns":{"db":"shop","coll":"orders"},"documentKey":{"_id":1},
                      "fullDocument":{"_id":1,"customerId":9,"status":"PAID"},)" +
                            before + R"("updateDescription":{"updatedFields":)" + updated +
                            R"(,"removedFields":[]}})"),
                      out);
    EXPECT_EQ(out.size(), 1u);
    return !out.empty() && std::get<fill_write>(out.front().what).unset_without_source;
  };
  EXPECT_TRUE(plan(R"({"customerId":9})", ""));
  EXPECT_FALSE(plan(R"({"status":"PAID"})", ""));
  // With a pre-image, by what the target named before.
  EXPECT_FALSE(plan(R"({"customerId":9})",
                    R"("fullDocumentBeforeChange":{"_id":1,"customerId":9.0,"status":"NEW"},)"));
  EXPECT_TRUE(plan(R"({"status":"PAID"})",
                   R"("fullDocumentBeforeChange":{"_id":1,"customerId":8,"status":"NEW"},)"));
}

TEST(copy_kind_test, fills_are_completed_together_in_one_read_one_write_and_one_read_again) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  // Orders 1 to 4 name customers 7, 8, 7 (as 7.0: equal in MongoDB) and 9, which does not
  // exist yet.
  const std::vector<write_op> ops = {fill_of(m, 1, "7"), fill_of(m, 2, "8"), fill_of(m, 3, "7.0"),
                                     fill_of(m, 4, "9")};
  fake_store store;
  store.add("customers", R"({"_id":8,"name":"Bo"})");
  store.add("customers", R"({"_id":7,"name":"Ann","address":{"city":"Oslo"}})");
  ASSERT_TRUE(kind_of(m).complete(m, pointers(ops), store));
  EXPECT_EQ(store.finds, 2);
  EXPECT_EQ(store.bulks, 1);
  ASSERT_EQ(store.writes.size(), 3u);
  const std::string ann = R"({"$set":{"customer.name":"Ann","customer.city":"Oslo"}})";
  const std::string bo = R"({"$set":{"customer.name":"Bo"},"$unset":{"customer.city":""}})";
  EXPECT_EQ(store.writes[0].filter, filter_of(1, "7"));
  EXPECT_EQ(store.writes[0].update, ann);
  EXPECT_EQ(store.writes[1].filter, filter_of(2, "8"));
  EXPECT_EQ(store.writes[1].update, bo);
  EXPECT_EQ(store.writes[2].filter, filter_of(3, "7.0"));
  EXPECT_EQ(store.writes[2].update, ann);
}

TEST(copy_kind_test, only_the_fills_whose_source_changed_meanwhile_are_written_again) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  const std::vector<write_op> ops = {fill_of(m, 1, "7"), fill_of(m, 2, "8")};
  fake_store store;
  store.add("customers", R"({"_id":7,"name":"Ann"})");
  store.add("customers", R"({"_id":8,"name":"Bo"})");
  store.after_first_write = [&] {
    store.replace_all("customers", R"({"_id":7,"name":"Cy"})");
    store.add("customers", R"({"_id":8,"name":"Bo"})");
  };
  ASSERT_TRUE(kind_of(m).complete(m, pointers(ops), store));
  ASSERT_EQ(store.writes.size(), 3u);
  EXPECT_EQ(store.bulks, 2);
  EXPECT_EQ(store.finds, 3);  // read, read again (7 changed), read 7 again
  EXPECT_EQ(store.writes[2].filter, filter_of(1, "7"));
  EXPECT_EQ(store.writes[2].update,
            R"({"$set":{"customer.name":"Cy"},"$unset":{"customer.city":""}})");
}

TEST(copy_kind_test, two_fills_of_one_target_are_applied_in_plan_order) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  // Order 1 named customer 7, then was changed to name customer 8.
  const std::vector<write_op> ops = {fill_of(m, 1, "7"), fill_of(m, 2, "7"), fill_of(m, 1, "8")};
  fake_store store;
  store.add("customers", R"({"_id":7,"name":"Ann"})");
  store.add("customers", R"({"_id":8,"name":"Bo"})");
  ASSERT_TRUE(kind_of(m).complete(m, pointers(ops), store));
  ASSERT_EQ(store.writes.size(), 3u);
  EXPECT_EQ(store.bulks, 2);  // the second fill of order 1 waits for a round of its own
  EXPECT_EQ(store.writes[2].filter, filter_of(1, "8"));
  EXPECT_EQ(store.writes[2].update,
            R"({"$set":{"customer.name":"Bo"},"$unset":{"customer.city":""}})");
}

TEST(copy_kind_test, a_key_shared_by_many_sources_cannot_hide_another_keys_source) {
  // Customers referenced by email, which is not unique: the read of two keys is limited to
  // two documents, and both may be the first key's.
  auto ms = load(R"({"name":"oc","kind":"copy",
    "source":{"collection":"customers","key":"email"},
    "target":{"collection":"orders","key":"customerId"},
    "into":"customer","fields":{"name":"name"}})");
  const auto& m = ms.front();
  const std::vector<write_op> ops = {fill_of(m, 1, R"("a@x")"), fill_of(m, 2, R"("b@x")")};
  fake_store store;
  store.honor_limit = true;
  store.add("customers", R"({"_id":1,"email":"a@x","name":"Ann"})");
  store.add("customers", R"({"_id":2,"email":"a@x","name":"Ann 2"})");
  store.add("customers", R"({"_id":3,"email":"b@x","name":"Bo"})");
  ASSERT_TRUE(kind_of(m).complete(m, pointers(ops), store));
  ASSERT_EQ(store.writes.size(), 2u);
  EXPECT_EQ(store.writes[0].update, R"({"$set":{"customer.name":"Ann"}})");
  EXPECT_EQ(store.writes[1].filter, filter_of(2, R"("b@x")"));
  EXPECT_EQ(store.writes[1].update, R"({"$set":{"customer.name":"Bo"}})");
}

TEST(copy_kind_test, a_failed_call_stops_a_batch_of_fills) {
  auto ms = load(testing::customer_mapping);
  const auto& m = ms.front();
  const std::vector<write_op> ops = {fill_of(m, 1, "7"), fill_of(m, 2, "8")};
  for (int calls = 0; calls < 4; ++calls) {  // read, write, write, read again
    fake_store store;
    store.add("customers", R"({"_id":7,"name":"Ann"})");
    store.add("customers", R"({"_id":8,"name":"Bo"})");
    store.fail_after(calls);
    EXPECT_FALSE(kind_of(m).complete(m, pointers(ops), store)) << calls;
  }
}

}  // namespace
}  // namespace denormd::mapping
