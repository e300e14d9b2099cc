#include "ops/commands/drift.h"

#include <gtest/gtest.h>

#include <map>

#include "../test_mappings.h"

namespace denormd::ops {
namespace {

using testing::doc;
using testing::load_one;

// A lookup over a few source documents keyed by _id.
struct sources {
  std::map<bson::value, bson::document, value_less> by_key;
  explicit sources(std::initializer_list<const char*> json) {
    for (const char* j : json) {
      bson::document d = doc(j);
      by_key.emplace(*d.get("_id"), d);
    }
  }
  mapping::source_lookup lookup() const {
    return [this](const bson::value& k) -> const bson::document* {
      auto it = by_key.find(k);
      return it == by_key.end() ? nullptr : &it->second;
    };
  }
};

using paths = std::vector<std::string>;

TEST(ops_drift_test, check_copy_in_line_target_has_no_findings) {
  const auto m = load_one(testing::customer_copy);
  const sources s{R"({"_id":7,"name":"Ann","address":{"city":"Oslo"}})"};
  const auto f = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":7,"customer":{"name":"Ann","city":"Oslo"}})"), s.lookup());
  EXPECT_TRUE(f.paths.empty());
  EXPECT_TRUE(f.drifted_keys.empty());
  EXPECT_TRUE(f.missing_keys.empty());
}

TEST(ops_drift_test, check_copy_reports_different_missing_and_extra_copies) {
  const auto m = load_one(testing::customer_copy);
  // The source has no city: the copy must be absent, as the planner unsets it.
  const sources s{R"({"_id":7,"name":"Ann"})"};
  const auto f = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":7,"customer":{"city":"Oslo"}})"), s.lookup());
  EXPECT_EQ(f.paths, (paths{"customer.name", "customer.city"}));
  ASSERT_EQ(f.drifted_keys.size(), 1u);
  EXPECT_EQ(f.drifted_keys[0], bson::value(7));
}

// Verify compares as MongoDB's equality does: numbers by value whatever their type, and a
// copied NaN equals its source (it used to be drift on every run).
TEST(ops_drift_test, check_copy_compares_values_as_mongodb_does) {
  const auto m = load_one(testing::customer_copy);
  const auto& k = std::get<mapping::copy_kind>(m.kind);
  auto drift = [&](const char* source_name, const char* copied_name) {
    const sources s{
        (std::string(R"({"_id":7,"address":{"city":"Oslo"},"name":)") + source_name + "}").c_str()};
    return k
        .check(m,
               doc((std::string(R"({"_id":1,"customerId":7,"customer":{"city":"Oslo","name":)") +
                    copied_name + "}}")
                       .c_str()),
               s.lookup())
        .paths;
  };
  const paths none;
  const paths name{"customer.name"};
  const char* nan = R"({"$numberDouble":"NaN"})";
  EXPECT_EQ(drift(nan, nan), none);
  EXPECT_EQ(drift(R"({"$numberDecimal":"NaN"})", R"({"$numberDecimal":"NaN"})"), none);
  EXPECT_EQ(drift("5", "5.0"), none);
  EXPECT_EQ(drift("5", R"({"$numberLong":"5"})"), none);
  EXPECT_EQ(drift(R"({"$numberDecimal":"5"})", "5"), none);
  EXPECT_EQ(drift(R"({"a":[1,{"$numberDouble":"NaN"}]})", R"({"a":[1.0,{"$numberDouble":"NaN"}]})"),
            none);
  EXPECT_EQ(drift(nan, "5"), name);
  EXPECT_EQ(drift("5", nan), name);
  EXPECT_EQ(drift("5", R"("5")"), name);
  EXPECT_EQ(drift("5", "5.5"), name);
  // Documents compare field by field in order, as MongoDB's equality does.
  EXPECT_EQ(drift(R"({"a":1,"b":2})", R"({"b":2,"a":1})"), name);
}

TEST(ops_drift_test, check_copy_finds_the_source_of_a_numeric_key_of_another_type) {
  const auto m = load_one(testing::customer_copy);
  const sources s{R"({"_id":7,"name":"Ann","address":{"city":"Oslo"}})"};
  const auto f = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":7.0,"customer":{"name":"Ann","city":"Oslo"}})"), s.lookup());
  EXPECT_TRUE(f.paths.empty());
  EXPECT_TRUE(f.missing_keys.empty());
}

TEST(ops_drift_test, check_copy_missing_source_under_keep_is_not_drift) {
  const auto m = load_one(testing::customer_copy);
  const sources none{};
  const auto f = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":9,"customer":{"name":"Old"}})"), none.lookup());
  EXPECT_TRUE(f.paths.empty());
  ASSERT_EQ(f.missing_keys.size(), 1u);
  EXPECT_EQ(f.missing_keys[0], bson::value(9));
}

TEST(ops_drift_test, check_copy_missing_source_under_unset_wants_no_copies) {
  std::string json = testing::customer_copy;
  json.insert(json.size() - 1, R"(,"onSourceDelete":"unset")");
  const auto m = load_one(json);
  const sources none{};
  const auto f = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":9,"customer":{"name":"Old"}})"), none.lookup());
  EXPECT_EQ(f.paths, (paths{"customer.name"}));
  EXPECT_EQ(f.drifted_keys.size(), 1u);
  EXPECT_EQ(f.missing_keys.size(), 1u);
  const auto clean = std::get<mapping::copy_kind>(m.kind).check(
      m, doc(R"({"_id":1,"customerId":9})"), none.lookup());
  EXPECT_TRUE(clean.paths.empty());
  EXPECT_EQ(clean.missing_keys.size(), 1u);
}

TEST(ops_drift_test, check_copy_targets_without_a_key_are_never_written_so_never_checked) {
  const auto m = load_one(testing::customer_copy);
  const sources none{};
  EXPECT_TRUE(std::get<mapping::copy_kind>(m.kind)
                  .check(m, doc(R"({"_id":1})"), none.lookup())
                  .missing_keys.empty());
  EXPECT_TRUE(std::get<mapping::copy_kind>(m.kind)
                  .check(m, doc(R"({"_id":1,"customerId":null})"), none.lookup())
                  .missing_keys.empty());
  EXPECT_TRUE(std::get<mapping::copy_kind>(m.kind).referenced_keys(m, doc(R"({"_id":1})")).empty());
}

TEST(ops_drift_test, check_copy_array_elements_are_checked_one_by_one) {
  const auto m = load_one(testing::product_copy);
  const sources s{R"({"_id":7,"title":"Lamp","sku":"L7"})",
                  R"({"_id":8,"title":"Desk","sku":"D8"})"};
  const bson::document target = doc(R"({"_id":1,"items":[
      {"productId":7,"qty":1,"product":{"title":"Lamp","sku":"L7"}},
      {"productId":8,"product":{"title":"Old desk","sku":"D8"}},
      "not an element",
      {"productId":7,"product":{"title":"Lamp"}},
      {"qty":3}]})");
  const auto f = std::get<mapping::copy_kind>(m.kind).check(m, target, s.lookup());
  EXPECT_EQ(f.paths, (paths{"items.1.product.title", "items.3.product.sku"}));
  ASSERT_EQ(f.drifted_keys.size(), 2u);
  EXPECT_EQ(f.drifted_keys[0], bson::value(8));
  EXPECT_EQ(f.drifted_keys[1], bson::value(7));
  const auto keys = std::get<mapping::copy_kind>(m.kind).referenced_keys(m, target);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], bson::value(7));
  EXPECT_EQ(keys[1], bson::value(8));
}

TEST(ops_drift_test, check_recent_compares_element_by_element) {
  const auto m = load_one(testing::recent_reviews);
  const bson::array expected{doc(R"({"reviewId":1,"stars":5})"),
                             doc(R"({"reviewId":2,"stars":4})")};
  EXPECT_TRUE(std::get<mapping::recent_kind>(m.kind)
                  .check(m, doc(R"({"_id":1,"recentReviews":[{"reviewId":1,"stars":5},
      {"reviewId":2,"stars":4}]})"),
                         expected)
                  .empty());
  EXPECT_EQ(std::get<mapping::recent_kind>(m.kind).check(
                m, doc(R"({"_id":1,"recentReviews":[{"reviewId":2,"stars":4},
      {"reviewId":1,"stars":5}]})"),
                expected),
            (paths{"recentReviews.0", "recentReviews.1"}));
  EXPECT_EQ(std::get<mapping::recent_kind>(m.kind).check(
                m, doc(R"({"_id":1,"recentReviews":[{"reviewId":1,"stars":5}]})"), expected),
            (paths{"recentReviews.1"}));
  // Field order counts: the writer always builds elements in the mapping's order.
  EXPECT_EQ(std::get<mapping::recent_kind>(m.kind).check(
                m, doc(R"({"_id":1,"recentReviews":[{"stars":5,"reviewId":1},
      {"reviewId":2,"stars":4}]})"),
                expected),
            (paths{"recentReviews.0"}));
}

TEST(ops_drift_test, check_recent_compares_elements_as_mongodb_does) {
  const auto m = load_one(testing::recent_reviews);
  const auto& k = std::get<mapping::recent_kind>(m.kind);
  const bson::array expected{doc(R"({"reviewId":1,"stars":{"$numberDouble":"NaN"}})"),
                             doc(R"({"reviewId":2,"stars":4})")};
  EXPECT_TRUE(k.check(m, doc(R"({"_id":1,"recentReviews":[
      {"reviewId":1,"stars":{"$numberDouble":"NaN"}},{"reviewId":2.0,"stars":{"$numberLong":"4"}}]})"),
                      expected)
                  .empty());
  EXPECT_EQ(k.check(m, doc(R"({"_id":1,"recentReviews":[{"reviewId":1,"stars":5},
      {"reviewId":2,"stars":{"$numberDouble":"NaN"}}]})"),
                    expected),
            (paths{"recentReviews.0", "recentReviews.1"}));
}

TEST(ops_drift_test, check_recent_missing_array_is_an_empty_one_and_a_non_array_is_drift) {
  const auto m = load_one(testing::recent_reviews);
  EXPECT_TRUE(std::get<mapping::recent_kind>(m.kind).check(m, doc(R"({"_id":1})"), {}).empty());
  EXPECT_EQ(std::get<mapping::recent_kind>(m.kind).check(m, doc(R"({"_id":1})"),
                                                         bson::array{doc(R"({"reviewId":1})")}),
            (paths{"recentReviews.0"}));
  EXPECT_EQ(
      std::get<mapping::recent_kind>(m.kind).check(m, doc(R"({"_id":1,"recentReviews":"x"})"), {}),
      (paths{"recentReviews"}));
}

TEST(ops_drift_test, narrow_to_puts_the_id_first_or_joins_with_and) {
  mapping::write_op op;
  mapping::update_write many;
  many.many = true;
  many.filter = doc(R"({"customerId":7,"status":{"$ne":"DONE"}})");
  op.what = many;
  const auto& w = std::get<mapping::update_write>(op.what);
  narrow_to(op, bson::value(3));
  EXPECT_EQ(w.filter, doc(R"({"_id":{"$eq":3},"customerId":7,"status":{"$ne":"DONE"}})"));
  EXPECT_FALSE(w.many);

  std::get<mapping::update_write>(op.what).filter = doc(R"({"_id":{"$gt":1}})");
  narrow_to(op, bson::value(3));
  EXPECT_EQ(w.filter, doc(R"({"$and":[{"_id":{"$eq":3}},{"_id":{"$gt":1}}]})"));
}

}  // namespace
}  // namespace denormd::ops
