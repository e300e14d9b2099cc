// The stored checkpoint document: what a save writes and what a load reads back.
#include "checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::checkpoint {
namespace {

bson::document parse(const std::string& json) {
  auto doc = bson::parse_json(json);
  EXPECT_TRUE(doc.has_value()) << json;
  return doc ? std::move(doc).value() : bson::document{};
}

// The document an upsert with `update` makes of an empty one (only $set is used).
bson::document stored(const bson::document& update) {
  const bson::value* set = update.get("$set");
  EXPECT_TRUE(set != nullptr && set->is_document()) << bson::to_json(update);
  EXPECT_EQ(update.size(), 1U) << bson::to_json(update);
  return set != nullptr && set->is_document() ? set->as_document() : bson::document{};
}

TEST(checkpoint_store_test, a_save_stores_token_event_time_and_save_time) {
  const checkpoint cp{parse(R"({"_data":"8263"})"), 1'700'000'000'000, 0};
  const auto doc = stored(save_update(cp, 1'700'000'005'000));
  EXPECT_EQ(bson::to_json(doc), bson::to_json(parse(R"({"token":{"_data":"8263"},
      "savedAt":{"$date":{"$numberLong":"1700000005000"}},
      "wallTime":{"$date":{"$numberLong":"1700000000000"}}})")));
  auto back = parse_checkpoint(doc);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->token, cp.token);
  EXPECT_EQ(back->event_ms, cp.event_ms);
  EXPECT_EQ(back->saved_ms, 1'700'000'005'000);
}

TEST(checkpoint_store_test, a_save_without_an_event_time_keeps_the_stored_one) {
  // Idle since the start: the stored last-event time must not become 1970-01-01.
  const checkpoint cp{parse(R"({"_data":"8264"})"), 0, 0};
  const auto doc = stored(save_update(cp, 1'700'000'009'000));
  EXPECT_FALSE(doc.contains("wallTime")) << bson::to_json(doc);
  EXPECT_TRUE(doc.contains("token"));
  EXPECT_TRUE(doc.contains("savedAt"));
}

TEST(checkpoint_store_test, a_given_save_time_is_kept) {
  const checkpoint cp{parse(R"({"_data":"8265"})"), 5, 7};
  auto back = parse_checkpoint(stored(save_update(cp, 99)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->saved_ms, 7);
}

TEST(checkpoint_store_test, a_document_without_a_token_is_no_checkpoint) {
  // A document whose token was removed: the rest of it stays.
  EXPECT_FALSE(parse_checkpoint(parse(R"({"_id":"shop.customers",
      "wallTime":{"$date":{"$numberLong":"5"}}})")));
  EXPECT_FALSE(parse_checkpoint(parse(R"({"_id":"shop.customers","token":"x"})")));
  auto bare = parse_checkpoint(parse(R"({"token":{"_data":"1"}})"));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->event_ms, 0);
  EXPECT_EQ(bare->saved_ms, 0);
}

}  // namespace
}  // namespace denormd::checkpoint
