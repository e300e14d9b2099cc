// The document an upsert inserts: equality seeding, then the update with $setOnInsert.
#include "query_operators.h"
#include "test_support.h"
#include "update.h"

namespace mongo_emulator::engine::testing {
namespace {

namespace bson = denormd::bson;

denormd::query::matcher query(const char* filter) {
  auto m = mongo_emulator::engine::compile_query(doc(filter));
  EXPECT_TRUE(m) << filter;
  return m ? *m : denormd::query::matcher{};
}

TEST(upsert_seed, equality_predicates) {
  struct seed_case {
    const char* query;
    const char* seed;
  };
  const seed_case cases[] = {
      {R"({"a": 1, "b": "x"})", R"({"a": 1, "b": "x"})"},
      {R"({"b.c": 2, "a": 1})", R"({"b": {"c": 2}, "a": 1})"},
      {R"({"b.c": 2, "b.d": 3})", R"({"b": {"c": 2, "d": 3}})"},
      {R"({"a.0": 1})", R"({"a": {"0": 1}})"},
      {R"({"a": 1, "_id": 5})", R"({"_id": 5, "a": 1})"},
      {R"({"a": {"$eq": {"x": 1}}})", R"({"a": {"x": 1}})"},
      {R"({"a": {"$eq": 1, "$gt": 0}})", R"({"a": 1})"},
      {R"({"a": {"$in": [7]}, "b": {"$in": [1, 2]}})", R"({"a": 7})"},
      {R"({"a": {"$all": [7]}})", R"({"a": 7})"},
      {R"({"$and": [{"a": 1}, {"$and": [{"b": {"$eq": 2}}]}]})", R"({"a": 1, "b": 2})"},
      {R"({"$or": [{"a": 1}]})", R"({"a": 1})"},
      {R"({"$or": [{"a": 1}, {"b": 2}]})", R"({})"},
      {R"({"$nor": [{"a": 1}]})", R"({})"},
      {R"({"a": {"$gt": 1}, "b": {"$ne": 2}, "c": {"$exists": true}})", R"({})"},
      {R"({"a": null})", R"({"a": null})"},
      {R"({"a": [1, 2]})", R"({"a": [1, 2]})"},
      {R"({"a": 1, "a.b": 2})", R"({"a": 1})"},  // conflicting paths are skipped here
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.query);
    EXPECT_EQ(json(seed_upsert(query(c.query))), json(doc(c.seed)));
  }
}

TEST(upsert_document, operator_update) {
  const bson::value new_id(std::int32_t{42});
  auto make = [&](const char* filter, const char* update) {
    auto spec = parse_update(doc(update), {});
    EXPECT_TRUE(spec) << update;
    return make_upsert_document(*spec, query(filter), new_id);
  };
  {
    auto d =
        make(R"({"k": 1})", R"({"$set": {"a": 1}, "$setOnInsert": {"c": 3}, "$inc": {"n": 1}})");
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 42, "k": 1, "a": 1, "c": 3, "n": 1})")));
  }
  {
    auto d = make(R"({"_id": 7, "x.y": 1})", R"({"$push": {"r": 1}})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 7, "x": {"y": 1}, "r": [1]})")));
  }
  {
    // The update may overwrite a seeded field.
    auto d = make(R"({"a": 1})", R"({"$set": {"a": 2}})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 42, "a": 2})")));
  }
  {
    // An _id set by the update when the query had none goes first.
    auto d = make(R"({"a": 1})", R"({"$set": {"_id": "mine"}})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": "mine", "a": 1})")));
  }
  {
    auto d = make(R"({"_id": 7})", R"({"$set": {"_id": 8}})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 66);
  }
  {
    auto d = make(R"({"a": 1, "a.b": 2})", R"({"$set": {"c": 1}})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 54);
    EXPECT_EQ(d.error().message,
              "cannot infer query fields to set, both paths 'a.b' and 'a' are matched");
  }
  {
    auto d = make(R"({"$and": [{"a": 1}, {"a": 2}]})", R"({"$set": {"c": 1}})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 54);
    EXPECT_EQ(d.error().message, "cannot infer query fields to set, path 'a' is matched twice");
  }
  {
    auto d = make(R"({"a": 1})", R"({"$set": {"r.$": 1}})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 2);
    EXPECT_EQ(d.error().message,
              "The positional operator did not find the match needed from the query.");
  }
  {
    auto d = make(R"({"a": 1})", R"({"$set": {"_id": [1]}})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 53);
  }
}

TEST(upsert_document, replacement) {
  const bson::value new_id(std::int32_t{42});
  auto make = [&](const char* filter, const char* update) {
    auto spec = parse_update(doc(update), {});
    EXPECT_TRUE(spec) << update;
    return make_upsert_document(*spec, query(filter), new_id);
  };
  {
    // Only _id comes from the query.
    auto d = make(R"({"_id": 7, "a": 1})", R"({"b": 2})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 7, "b": 2})")));
  }
  {
    auto d = make(R"({"a": 1})", R"({"b": 2})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 42, "b": 2})")));
  }
  {
    auto d = make(R"({"a": 1})", R"({"b": 2, "_id": 3})");
    ASSERT_TRUE(d);
    EXPECT_EQ(json(*d), json(doc(R"({"_id": 3, "b": 2})")));
  }
  {
    auto d = make(R"({"_id": 7})", R"({"_id": 8})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 66);
    EXPECT_EQ(d.error().message,
              "After applying the update, the (immutable) field '_id' was found to have been "
              "altered to _id: 8");
  }
  {
    auto d = make(R"({"_id.x": 1})", R"({"b": 2})");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code, 55);
  }
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
