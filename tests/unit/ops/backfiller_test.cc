#include "ops/backfiller.h"

#include <gtest/gtest.h>

#include "object_id.h"
#include "query_operators.h"
#include "test_mappings.h"

namespace denormd::ops {
namespace {

using testing::doc;

// Whether a document with this _id comes after `last` by the filter.
bool after(const bson::value& last, const bson::value& id) {
  // $type is the test server's: denormd never evaluates this filter itself.
  auto m = mongo_emulator::engine::compile_query(after_key_filter(last));
  EXPECT_TRUE(m.has_value());
  return m && m->matches(bson::document{{"_id", id}});
}

TEST(ops_backfiller_test, after_key_filter_continues_in_id_order_across_type_brackets) {
  const bson::value five(5);
  EXPECT_FALSE(after(five, bson::value(4)));
  EXPECT_FALSE(after(five, bson::value(5.0)));
  EXPECT_TRUE(after(five, bson::value(5.5)));
  EXPECT_TRUE(after(five, bson::value(std::int64_t{6})));
  // MongoDB's $gt stays in its type bracket: later brackets are added explicitly.
  EXPECT_TRUE(after(five, bson::value("a")));
  EXPECT_TRUE(after(five, bson::value(denormd::test::new_object_id())));
  EXPECT_TRUE(after(five, bson::value(bson::date_time{0})));
  EXPECT_FALSE(after(five, bson::value(bson::null_t{})));
  EXPECT_FALSE(after(five, bson::value(bson::min_key{})));

  const bson::value b("b");
  EXPECT_FALSE(after(b, bson::value("a")));
  EXPECT_TRUE(after(b, bson::value("c")));
  EXPECT_FALSE(after(b, bson::value(100)));
  EXPECT_TRUE(after(b, bson::value(denormd::test::new_object_id())));
}

TEST(ops_backfiller_test, after_key_filter_nothing_comes_after_max_key) {
  EXPECT_EQ(after_key_filter(bson::value(bson::max_key{})),
            (bson::document{{"_id", bson::document{{"$gt", bson::max_key{}}}}}));
}

TEST(ops_backfiller_test, parents_filter_is_a_range_within_one_type_bracket) {
  EXPECT_EQ(parents_filter(bson::array{bson::value(3), bson::value(4.5), bson::value(9)}),
            doc(R"({"_id":{"$gte":3,"$lte":9}})"));
  EXPECT_EQ(parents_filter(bson::array{bson::value(3), bson::value("a")}),
            doc(R"({"_id":{"$in":[3,"a"]}})"));
  EXPECT_EQ(parents_filter(bson::array{bson::value(3)}), doc(R"({"_id":{"$in":[3]}})"));
}

TEST(ops_backfiller_test, mapping_fingerprint_changes_with_what_the_backfill_writes) {
  const auto a = testing::load_one(testing::customer_copy);
  EXPECT_EQ(a.fingerprint(), testing::load_one(testing::customer_copy).fingerprint());
  EXPECT_EQ(a.fingerprint().size(), 16u);
  std::string other = testing::customer_copy;
  other.replace(other.find("\"city\":\"address.city\""), 21, "\"city\":\"address.town\"");
  EXPECT_NE(a.fingerprint(), testing::load_one(other).fingerprint());
  const auto r = testing::load_one(testing::recent_reviews);
  std::string limit = testing::recent_reviews;
  limit.replace(limit.find("\"limit\":3"), 9, "\"limit\":4");
  EXPECT_NE(r.fingerprint(), testing::load_one(limit).fingerprint());
}

// A stored fingerprint that changes restarts an unfinished backfill, so the same mapping keeps
// its fingerprint across versions (these were computed before the kinds became types).
TEST(ops_backfiller_test, mapping_fingerprints_stay_what_earlier_versions_stored) {
  EXPECT_EQ(testing::load_one(testing::customer_copy).fingerprint(), "ddafdffed2441211");
  EXPECT_EQ(testing::load_one(testing::recent_reviews).fingerprint(), "43f0bf12cdce1c8e");
}

}  // namespace
}  // namespace denormd::ops
