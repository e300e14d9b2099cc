#include "mapping/partitioner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "bson/json.h"
#include "mapping/planner.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::load;

// Two copy mappings of customers and one recent mapping, owned for the ops to point at.
struct fixture {
  std::vector<mapping> copies = [] {
    auto ms = load(testing::customer_mapping);
    auto more = load(R"({"name":"x","kind":"copy","source":{"collection":"customers"},
      "target":{"collection":"invoices","key":"c"},"fields":{"n":"name"}})");
    ms.push_back(std::move(more.front()));
    return ms;
  }();
  std::vector<mapping> recent = load(testing::review_mapping);
};

write_op update_of(const mapping& m, bson::value key, std::size_t event) {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.merge = merge_rule::last_wins;
  op.merge_key = key;
  op.what = update_write{true, bson::document{{"customerId", key}}, {}, {}, false, {}, {}, {}};
  op.event = event;
  return op;
}

write_op fill_of(const mapping& m, bson::value target, bson::value key, std::size_t event) {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  // As the copy kind plans it: that target, while it names that key.
  op.what = fill_write{
      bson::document{{"_id", target}, {"customerId", key}}, {}, fill_query{m.source, "_id", key}};
  op.event = event;
  return op;
}

write_op recent_op(const mapping& m, merge_rule rule, bson::value parent, std::size_t event) {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.merge = rule;
  op.merge_key = parent;
  op.what = update_write{};
  op.event = event;
  return op;
}

// Appends one recent op per parent 0..n-1 (as int64 when said: the same parents to MongoDB).
void add_parents(std::vector<write_op>& ops, const mapping& m, merge_rule rule, int n,
                 bool as_int64 = false) {
  for (int p = 0; p < n; ++p) {
    ops.push_back(recent_op(m, rule,
                            as_int64 ? bson::value(std::int64_t{p}) : bson::value(std::int32_t{p}),
                            ops.size()));
  }
}

// The group each op's event ended up in; checks that the groups are the ops in plan order.
std::vector<std::size_t> groups_of(const std::vector<write_op>& ops,
                                   const std::vector<std::size_t>& bounds, std::size_t events) {
  std::vector<std::size_t> at(events, SIZE_MAX);
  for (std::size_t g = 0; g + 1 < bounds.size(); ++g) {
    for (std::size_t i = bounds[g]; i < bounds[g + 1]; ++i) {
      if (i > bounds[g]) {
        EXPECT_LT(ops[i - 1].event, ops[i].event) << "group " << g << " reordered";
      }
      at[ops[i].event] = g;
    }
  }
  return at;
}

TEST(partitioner_test, one_group_changes_nothing) {
  fixture f;
  std::vector<write_op> ops{update_of(f.copies[0], 2, 0), update_of(f.copies[0], 1, 1)};
  EXPECT_EQ(partition(ops, 1), (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(ops[0].event, 0u);
  EXPECT_EQ(ops[1].event, 1u);
  std::vector<write_op> none;
  EXPECT_EQ(partition(none, 3), (std::vector<std::size_t>{0, 0, 0, 0}));
}

TEST(partitioner_test, keys_spread_and_each_key_keeps_its_order_in_one_group) {
  fixture f;
  std::vector<write_op> ops;
  // Keys 0..99, each twice, the second time as a double (the same key to MongoDB), then as a
  // fill target; every key's ops must stay in one group, in order.
  for (int k = 0; k < 100; ++k)
    ops.push_back(update_of(f.copies[0], k, ops.size()));
  for (int k = 0; k < 100; ++k)
    ops.push_back(update_of(f.copies[0], static_cast<double>(k), ops.size()));
  const std::size_t n = ops.size();
  const auto bounds = partition(ops, 4);
  ASSERT_EQ(bounds.size(), 5u);
  EXPECT_EQ(bounds.front(), 0u);
  EXPECT_EQ(bounds.back(), n);
  const auto at = groups_of(ops, bounds, n);
  std::set<std::size_t> used;
  for (int k = 0; k < 100; ++k) {
    EXPECT_EQ(at[static_cast<std::size_t>(k)], at[static_cast<std::size_t>(100 + k)]) << k;
    used.insert(at[static_cast<std::size_t>(k)]);
  }
  EXPECT_EQ(used.size(), 4u);  // 100 keys use every group
}

TEST(partitioner_test, fills_of_one_target_stay_together_whatever_their_source) {
  fixture f;
  std::vector<write_op> ops;
  // Order 7 is filled from customer 1, then (its reference changed) from customer 2: the
  // second must be written after the first. Other orders spread.
  ops.push_back(fill_of(f.copies[0], 7, 1, 0));
  for (int t = 100; t < 140; ++t)
    ops.push_back(fill_of(f.copies[0], t, t, ops.size()));
  ops.push_back(fill_of(f.copies[0], 7, 2, ops.size()));
  const std::size_t n = ops.size();
  const auto at = groups_of(ops, partition(ops, 2), n);
  EXPECT_EQ(at[0], at[n - 1]);
  EXPECT_EQ(std::set<std::size_t>(at.begin(), at.end()).size(), 2u);
}

TEST(partitioner_test, a_mapping_with_an_op_of_unknown_documents_stays_whole) {
  fixture f;
  const mapping& rr = f.recent[0];
  std::vector<write_op> ops;
  add_parents(ops, rr, merge_rule::push, 30);
  ops.push_back(recent_op(rr, merge_rule::mapping_barrier, {}, ops.size()));
  add_parents(ops, rr, merge_rule::parent_barrier, 30);
  const std::size_t recent_ops = ops.size();
  // Another mapping in the same batch is not held by it.
  for (int k = 0; k < 30; ++k)
    ops.push_back(update_of(f.copies[1], k, ops.size()));
  const std::size_t n = ops.size();
  const auto at = groups_of(ops, partition(ops, 2), n);
  for (std::size_t i = 1; i < recent_ops; ++i)
    EXPECT_EQ(at[i], at[0]) << i;
  EXPECT_EQ(
      std::set<std::size_t>(at.begin() + static_cast<std::ptrdiff_t>(recent_ops), at.end()).size(),
      2u);
}

TEST(partitioner_test, parents_of_recent_ops_are_their_units) {
  fixture f;
  const mapping& rr = f.recent[0];
  std::vector<write_op> ops;
  add_parents(ops, rr, merge_rule::push, 20);
  add_parents(ops, rr, merge_rule::parent_barrier, 20, true);
  const std::size_t n = ops.size();
  const auto at = groups_of(ops, partition(ops, 3), n);
  for (std::size_t p = 0; p < 20; ++p)
    EXPECT_EQ(at[p], at[20 + p]) << p;
  EXPECT_GT(std::set<std::size_t>(at.begin(), at.end()).size(), 1u);
}

}  // namespace
}  // namespace denormd::mapping
