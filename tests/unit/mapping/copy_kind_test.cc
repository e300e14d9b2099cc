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

// The fill a new order with customerId 7 needs.
write_op fill_of(const mapping& m) {
  std::vector<write_op> out;
  const auto& k = kind_of(m);
  k.plan_new_target(m, k.fill_paths(), event(R"({"_id":{"t":1},"operationType":"insert",
                      "ns":{"db":"shop","coll":"orders"},"documentKey":{"_id":1},
                      "fullDocument":{"_id":1,"customerId":7}})"),
                    out);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? write_op{} : out.front();
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
  EXPECT_EQ(store.writes[0].filter, R"({"_id":{"$eq":1}})");
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

}  // namespace
}  // namespace denormd::mapping
