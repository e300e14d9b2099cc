// Collections and indexes without a server: index lookups narrow the candidates (so a fan-out
// update does not scan), multikey and numeric equality, unique constraints.

#include "collection.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "query/matcher.h"
#include "query_operators.h"

namespace mongo_emulator {
namespace {

doc_ptr D(std::string_view json) {
  return std::make_shared<const bson::document>(bson::parse_json(json).value());
}

denormd::query::matcher Q(std::string_view json) {
  return mongo_emulator::engine::compile_query(bson::parse_json(json).value()).value();
}

index_spec spec(std::string_view key_json, std::string name, bool unique = false,
                bool sparse = false) {
  index_spec s;
  s.key = bson::parse_json(key_json).value();
  s.name = std::move(name);
  s.unique = unique;
  s.sparse = sparse;
  return s;
}

class collection_test : public ::testing::Test {
 protected:
  collection c{"db", "c"};
  void fill() {
    for (int i = 0; i < 100; ++i) {
      bson::document d;
      d.append("_id", std::int32_t{i});
      d.append("g", i % 10 == 0 ? "rare" : "common");
      d.append("n", std::int32_t{i % 3});
      ASSERT_TRUE(c.insert(std::make_shared<const bson::document>(std::move(d))));
    }
  }
};

TEST_F(collection_test, id_lookup_and_duplicate_message) {
  ASSERT_TRUE(c.insert(D(R"({"_id": 1, "a": 1})")));
  auto dup = c.insert(D(R"({"_id": 1.0})"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, 11000);
  EXPECT_EQ(dup.error().message,
            "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1.0 }");
  EXPECT_TRUE(c.find_id(bson::value(std::int64_t{1})));
  EXPECT_EQ(c.candidates(Q(R"({"_id": 1})")).size(), 1U);
  EXPECT_TRUE(c.candidates(Q(R"({"_id": 2})")).empty());
}

TEST_F(collection_test, secondary_index_narrows_candidates) {
  fill();
  EXPECT_EQ(c.candidates(Q(R"({"g": "rare"})")).size(), 100U);  // no index yet: a scan
  ASSERT_TRUE(c.create_index(spec(R"({"g": 1})", "g_1")));
  EXPECT_EQ(c.candidates(Q(R"({"g": "rare"})")).size(), 10U);
  EXPECT_EQ(c.candidates(Q(R"({"g": "rare", "n": 0})")).size(), 10U);
  EXPECT_EQ(c.candidates(Q(R"({"$and": [{"g": "rare"}, {"n": {"$gt": 0}}]})")).size(), 10U);
  // Null and range predicates cannot use the equality lookup.
  EXPECT_EQ(c.candidates(Q(R"({"g": null})")).size(), 100U);
  EXPECT_EQ(c.candidates(Q(R"({"g": {"$gt": "a"}})")).size(), 100U);
}

TEST_F(collection_test, compound_index_serves_its_prefix) {
  fill();
  ASSERT_TRUE(c.create_index(spec(R"({"g": 1, "n": 1})", "g_1_n_1")));
  EXPECT_EQ(c.candidates(Q(R"({"g": "rare"})")).size(), 10U);
  const auto exact = c.candidates(Q(R"({"n": 0, "g": "rare"})"));
  EXPECT_EQ(exact.size(), 4U);                             // 0, 30, 60, 90
  EXPECT_EQ(c.candidates(Q(R"({"n": 0})")).size(), 100U);  // not a prefix
}

TEST_F(collection_test, an_in_list_seeks_each_value) {
  fill();
  ASSERT_TRUE(c.create_index(spec(R"({"n": 1})", "n_1")));
  // One seek per value, as MongoDB's planner does for $in (the aggregate kind's $match).
  EXPECT_EQ(c.candidates(Q(R"({"n": {"$in": [0, 2]}})")).size(), 67U);
  EXPECT_EQ(c.candidates(Q(R"({"n": {"$in": [1.0], "$gte": 0}})")).size(), 33U);
  EXPECT_EQ(c.candidates(Q(R"({"$and": [{"n": {"$in": [1]}}, {"g": "rare"}]})")).size(), 33U);
  EXPECT_EQ(c.candidates(Q(R"({"_id": {"$in": [3, 5, 1000]}})")),
            (std::vector<std::uint64_t>{4, 6}));
  EXPECT_TRUE(c.candidates(Q(R"({"n": {"$in": []}})")).empty());
  // Values an index cannot serve exactly, and fields without an index, scan.
  EXPECT_EQ(c.candidates(Q(R"({"n": {"$in": [0, null]}})")).size(), 100U);
  EXPECT_EQ(c.candidates(Q(R"({"g": {"$in": ["rare"]}})")).size(), 100U);
}

TEST_F(collection_test, an_or_whose_every_clause_has_an_index_is_their_union) {
  fill();
  ASSERT_TRUE(c.create_index(spec(R"({"n": 1})", "n_1")));
  // One lookup per clause, as MongoDB's planner does for $or (denormd's fenced writer counts
  // what a batch's updates will write with one such read); the union in natural order.
  EXPECT_EQ(c.candidates(Q(R"({"$or": [{"_id": 3}, {"_id": 1}, {"_id": 3}]})")),
            (std::vector<std::uint64_t>{2, 4}));
  EXPECT_EQ(c.candidates(Q(R"({"$or": [{"n": 1, "g": "rare"}, {"_id": 0}]})")).size(), 34U);
  EXPECT_EQ(
      c.candidates(Q(R"({"$and": [{"g": "rare"}, {"$or": [{"n": {"$eq": 2}}, {"_id": 3}]}]})"))
          .size(),
      34U);
  // One clause without an index makes it a scan, as it does on MongoDB.
  EXPECT_EQ(c.candidates(Q(R"({"$or": [{"n": 1}, {"g": "rare"}]})")).size(), 100U);
}

TEST_F(collection_test, multikey_and_numeric_equality) {
  ASSERT_TRUE(c.create_index(spec(R"({"tags": 1})", "tags_1")));
  ASSERT_TRUE(c.create_index(spec(R"({"v": 1})", "v_1")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 1, "tags": ["x", "y"], "v": 1})")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 2, "tags": "x", "v": 2.5})")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 3, "tags": [["x", "y"]], "v": {"$numberLong": "1"}})")));
  EXPECT_EQ(c.candidates(Q(R"({"tags": "x"})")), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(c.candidates(Q(R"({"tags": ["x", "y"]})")), (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(c.candidates(Q(R"({"v": 1.0})")), (std::vector<std::uint64_t>{1, 3}));
}

TEST_F(collection_test, unique_index_enforces_and_leaves_state_unchanged) {
  ASSERT_TRUE(c.create_index(spec(R"({"a": 1})", "a_1", true)));
  ASSERT_TRUE(c.insert(D(R"({"_id": 1, "a": 1})")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 2, "a": 2})")));
  auto dup = c.insert(D(R"({"_id": 3, "a": [5, 1]})"));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().message,
            "E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 1 }");
  EXPECT_FALSE(c.find_id(bson::value(std::int32_t{3})));
  const auto second = *c.find_id(bson::value(std::int32_t{2}));
  auto bad = c.replace(second, D(R"({"_id": 2, "a": 1})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(*c.get(second), *D(R"({"_id": 2, "a": 2})"));
  EXPECT_EQ(c.candidates(Q(R"({"a": 2})")), (std::vector<std::uint64_t>{2}));
  // Missing fields index as null: a second document without `a` collides...
  ASSERT_TRUE(c.insert(D(R"({"_id": 4})")));
  EXPECT_FALSE(c.insert(D(R"({"_id": 5})")));
  // ...unless the index is sparse.
  ASSERT_TRUE(c.create_index(spec(R"({"s": 1})", "s_1", true, true)));
  c.erase(*c.find_id(bson::value(std::int32_t{4})));
  ASSERT_TRUE(c.insert(D(R"({"_id": 6, "a": 6})")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 7, "a": 7})")));
}

TEST_F(collection_test, erase_and_replace_keep_indexes_in_step) {
  ASSERT_TRUE(c.create_index(spec(R"({"a": 1})", "a_1")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 1, "a": "x"})")));
  ASSERT_TRUE(c.replace(1, D(R"({"_id": 1, "a": "y"})")));
  EXPECT_TRUE(c.candidates(Q(R"({"a": "x"})")).empty());
  EXPECT_EQ(c.candidates(Q(R"({"a": "y"})")).size(), 1U);
  c.erase(1);
  EXPECT_TRUE(c.candidates(Q(R"({"a": "y"})")).empty());
  EXPECT_EQ(c.size(), 0U);
  EXPECT_FALSE(c.find_id(bson::value(std::int32_t{1})));
}

TEST_F(collection_test, create_index_conflicts_and_duplicates) {
  ASSERT_TRUE(c.insert(D(R"({"_id": 1, "a": 1})")));
  ASSERT_TRUE(c.insert(D(R"({"_id": 2, "a": 1})")));
  auto unique = c.create_index(spec(R"({"a": 1})", "a_1", true));
  ASSERT_FALSE(unique);
  EXPECT_EQ(unique.error().code, 11000);
  ASSERT_TRUE(c.create_index(spec(R"({"a": 1})", "a_1")));
  EXPECT_FALSE(*c.create_index(spec(R"({"a": 1})", "a_1")));  // identical: nothing to do
  EXPECT_EQ(c.create_index(spec(R"({"b": 1})", "a_1")).error().code, 86);
  EXPECT_EQ(c.create_index(spec(R"({"a": 1})", "other", true)).error().code, 85);
  EXPECT_EQ(c.index_specs().size(), 2U);
  EXPECT_EQ(c.drop_index("_id_").error().code, 72);
}

}  // namespace
}  // namespace mongo_emulator

namespace mongo_emulator {
namespace {

TEST(path_may_affect, only_provably_disjoint_paths_skip_an_index) {
  EXPECT_TRUE(path_may_affect("a", "a"));
  EXPECT_TRUE(path_may_affect("a", "a.b"));      // a parent of the indexed value
  EXPECT_TRUE(path_may_affect("a.b.c", "a.b"));  // inside the indexed value
  EXPECT_TRUE(path_may_affect("items", "items.productId"));
  EXPECT_TRUE(path_may_affect("items.3", "items.productId"));  // a whole element
  EXPECT_TRUE(path_may_affect("items.3.productId", "items.productId"));
  EXPECT_TRUE(path_may_affect("a.0.0.b", "a.0.b"));  // positions on both sides
  EXPECT_TRUE(path_may_affect("a.1", "a.0"));
  EXPECT_FALSE(path_may_affect("customer.name", "customerId"));
  EXPECT_FALSE(path_may_affect("items.3.product.title", "items.productId"));
  EXPECT_FALSE(path_may_affect("ab", "a"));
  EXPECT_FALSE(path_may_affect("a.b", "a.c"));
  EXPECT_FALSE(path_may_affect("a.1.x", "a.0.y"));
}

doc_ptr J(std::string_view json) {
  return std::make_shared<const bson::document>(bson::parse_json(json).value());
}

denormd::query::matcher M(std::string_view json) {
  return mongo_emulator::engine::compile_query(bson::parse_json(json).value()).value();
}

// collection::update trusts the update description to skip indexes on unchanged paths; the
// indexes on changed paths must still follow the document, including unique checks.
TEST(collection_update, skips_only_indexes_on_unchanged_paths) {
  collection c{"db", "c"};
  index_spec by_item;
  by_item.name = "items.productId_1";
  by_item.key = bson::parse_json(R"({"items.productId": 1})").value();
  index_spec by_code;
  by_code.name = "code_1";
  by_code.key = bson::parse_json(R"({"code": 1})").value();
  by_code.unique = true;
  ASSERT_TRUE(c.create_index(by_item));
  ASSERT_TRUE(c.create_index(by_code));
  auto r1 = c.insert(J(R"({"_id": 1, "code": 1, "items": [{"productId": 5, "t": "x"}]})"));
  auto r2 = c.insert(J(R"({"_id": 2, "code": 2, "items": [{"productId": 6, "t": "x"}]})"));
  ASSERT_TRUE(r1 && r2);

  // A title change leaves both indexes as they were.
  ASSERT_TRUE(c.update(*r1, J(R"({"_id": 1, "code": 1, "items": [{"productId": 5, "t": "y"}]})"),
                       bson::parse_json(R"({"updatedFields": {"items.0.t": "y"},
                                            "removedFields": [], "truncatedArrays": []})")
                           .value()));
  EXPECT_EQ(c.candidates(M(R"({"items.productId": 5})")), std::vector<std::uint64_t>{*r1});

  // A changed array moves the multikey entries.
  ASSERT_TRUE(c.update(*r1, J(R"({"_id": 1, "code": 1, "items": [{"productId": 7}]})"),
                       bson::parse_json(R"({"updatedFields": {"items": [{"productId": 7}]},
                                            "removedFields": [], "truncatedArrays": []})")
                           .value()));
  EXPECT_TRUE(c.candidates(M(R"({"items.productId": 5})")).empty());
  EXPECT_EQ(c.candidates(M(R"({"items.productId": 7})")), std::vector<std::uint64_t>{*r1});

  // A removed field leaves the index, and a unique clash is still refused.
  ASSERT_TRUE(c.update(*r2, J(R"({"_id": 2, "items": [{"productId": 6}]})"),
                       bson::parse_json(R"({"updatedFields": {}, "removedFields": ["code"],
                                            "truncatedArrays": []})")
                           .value()));
  EXPECT_TRUE(c.candidates(M(R"({"code": 2})")).empty());
  auto clash = c.update(*r2, J(R"({"_id": 2, "code": 1, "items": [{"productId": 6}]})"),
                        bson::parse_json(R"({"updatedFields": {"code": 1}, "removedFields": [],
                                             "truncatedArrays": []})")
                            .value());
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().code, 11000);
}

}  // namespace
}  // namespace mongo_emulator
