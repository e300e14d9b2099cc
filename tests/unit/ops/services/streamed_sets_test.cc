#include "ops/services/streamed_sets.h"

#include <gtest/gtest.h>

#include "../test_mappings.h"

namespace denormd::ops {
namespace {

using testing::doc;
using testing::load_one;

using names = std::vector<std::string>;

// A copy that also fills new orders: it reads customers and orders.
const char* filling_copy = R"({"name":"orders-customer","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
  "into":"customer","fields":{"name":"name"},"fillNewTargets":true})";

std::string record(const std::string& ns, const std::string& name, const std::string& print) {
  return R"({"_id":")" + ns + R"(","mappings":{")" + name + R"(":")" + print + R"("}})";
}

TEST(streamed_sets_test, a_mapping_waits_for_every_namespace_it_reads_to_run_its_definition) {
  const auto m = load_one(filling_copy);
  EXPECT_EQ(reads_of(m), (std::vector<mapping::ns>{{"shop", "customers"}, {"shop", "orders"}}));
  const std::vector<const mapping::mapping*> which{&m};
  const std::string print = m.fingerprint();
  EXPECT_EQ(not_streamed(which, {}),
            (names{"shop.customers (orders-customer)", "shop.orders (orders-customer)"}));
  // The customers stream runs the old definition; the orders stream runs the new one.
  const std::vector<bson::document> half{doc(record("shop.customers", m.name, "old")),
                                         doc(record("shop.orders", m.name, print))};
  EXPECT_EQ(not_streamed(which, half), names{"shop.customers (orders-customer)"});
  const std::vector<bson::document> both{doc(record("shop.customers", m.name, print)),
                                         doc(record("shop.orders", m.name, print))};
  EXPECT_TRUE(not_streamed(which, both).empty());
  // Another mapping's record is not this one's.
  const std::vector<bson::document> other{doc(record("shop.customers", "other", print)),
                                          doc(record("shop.orders", m.name, print))};
  EXPECT_EQ(not_streamed(which, other), names{"shop.customers (orders-customer)"});
}

TEST(streamed_sets_test, a_partitioned_namespace_runs_a_definition_once_every_partition_does) {
  const auto m = load_one(filling_copy);
  const std::vector<const mapping::mapping*> which{&m};
  const std::string print = m.fingerprint();
  const std::vector<mapping::ns> units{{"shop", "customers"},
                                       {"shop", "orders", mapping::partition{0, 2}},
                                       {"shop", "orders", mapping::partition{1, 2}}};
  std::vector<bson::document> records{doc(record("shop.customers", m.name, print)),
                                      doc(record("shop.orders#0/2", m.name, print)),
                                      doc(record("shop.orders", m.name, print))};
  // The whole namespace's record (from before it was partitioned) does not stand in for one.
  EXPECT_EQ(not_streamed(which, records, units), names{"shop.orders#1/2 (orders-customer)"});
  records.push_back(doc(record("shop.orders#1/2", m.name, print)));
  EXPECT_TRUE(not_streamed(which, records, units).empty());
}

TEST(streamed_sets_test, a_copy_without_fills_reads_its_source_only) {
  const auto m = load_one(testing::customer_copy);
  EXPECT_EQ(reads_of(m), (std::vector<mapping::ns>{{"shop", "customers"}}));
  const std::vector<const mapping::mapping*> which{&m};
  EXPECT_TRUE(
      not_streamed(which, {doc(record("shop.customers", m.name, m.fingerprint()))}).empty());
}

}  // namespace
}  // namespace denormd::ops
