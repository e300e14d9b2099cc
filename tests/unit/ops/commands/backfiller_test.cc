#include "ops/commands/backfiller.h"

#include <gtest/gtest.h>

#include "../test_mappings.h"

namespace denormd::ops {
namespace {

using testing::doc;

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
