#include "mapping/change_event.h"

#include <gtest/gtest.h>

#include "bson/json.h"

namespace denormd::mapping {
namespace {

expected<change_event> parse(const char* json) {
  auto doc = bson::parse_json(json);
  EXPECT_TRUE(doc.has_value()) << json;
  return change_event::parse(std::move(doc).value());
}

TEST(change_event_test, takes_apart_an_update) {
  auto ev = parse(R"({"_id":{"_data":"0a"},"operationType":"update",
    "clusterTime":{"$timestamp":{"t":5,"i":2}},"wallTime":{"$date":"2024-01-01T00:00:00Z"},
    "ns":{"db":"shop","coll":"customers"},"documentKey":{"_id":7},
    "updateDescription":{"updatedFields":{"name":"x","address.city":"y"},"removedFields":["email"],
      "truncatedArrays":[{"field":"tags","newSize":1}]},
    "fullDocument":{"_id":7,"name":"x"}})");
  ASSERT_TRUE(ev.has_value()) << ev.error().message;
  EXPECT_EQ(ev->op, operation::update);
  EXPECT_EQ(ev->source, (ns{"shop", "customers"}));
  EXPECT_EQ(ev->id, bson::value(7));
  EXPECT_EQ(ev->touched, (std::vector<std::string>{"name", "address.city", "email", "tags"}));
  EXPECT_EQ(ev->cluster_time, (bson::timestamp{5, 2}));
  ASSERT_TRUE(ev->wall_time.has_value());
  ASSERT_TRUE(ev->full_document.has_value());
  EXPECT_EQ(bson::to_json(ev->token), R"({"_data":"0a"})");
}

TEST(change_event_test, null_full_document_means_gone) {
  auto ev = parse(R"({"_id":{"_data":"0b"},"operationType":"update","ns":{"db":"a","coll":"b"},
    "documentKey":{"_id":1},"updateDescription":{"updatedFields":{}},"fullDocument":null})");
  ASSERT_TRUE(ev.has_value());
  EXPECT_FALSE(ev->full_document.has_value());
}

TEST(change_event_test, non_document_events_need_no_document_key) {
  auto ev = parse(R"({"_id":{"_data":"0c"},"operationType":"invalidate"})");
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->op, operation::invalidate);
  EXPECT_FALSE(ev->is_document_event());
  auto other = parse(R"({"_id":{"_data":"0d"},"operationType":"createIndexes","ns":{"db":"a"}})");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->op, operation::other);
}

TEST(change_event_test, malformed_events_are_errors_that_say_why) {
  struct bad {
    const char* json;
    const char* reason;
  };
  const bad cases[] = {
      {R"({"_id":{"_data":"1"}})", "no operationType"},
      {R"({"operationType":"insert"})", "no _id"},
      {R"({"_id":{"_data":"1"},"operationType":"insert","documentKey":{"_id":1},"fullDocument":{}})",
       "no ns"},
      {R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"a","coll":"b"},"fullDocument":{}})",
       "no documentKey._id"},
      {R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"a","coll":"b"},"documentKey":{"_id":1}})",
       "no fullDocument"},
      {R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"a","coll":"b"},"documentKey":{"_id":1}})",
       "no updateDescription"},
      {R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"a","coll":"b"},"documentKey":{"_id":1},
          "updateDescription":{"removedFields":[1]}})",
       "removedFields must hold strings"},
      {R"({"_id":{"_data":"1"},"operationType":"replace","ns":{"db":"a","coll":"b"},"documentKey":{"_id":1},
          "fullDocument":5})",
       "fullDocument must be a document"},
  };
  for (const auto& c : cases) {
    auto ev = parse(c.json);
    ASSERT_FALSE(ev.has_value()) << c.json;
    EXPECT_NE(ev.error().message.find(c.reason), std::string::npos) << ev.error().message;
  }
}

TEST(change_event_test, touches_is_dotted_path_aware) {
  EXPECT_TRUE(touches({"address"}, {"address.city"}));
  EXPECT_TRUE(touches({"address.city"}, {"address"}));
  EXPECT_TRUE(touches({"items.3"}, {"items"}));
  EXPECT_FALSE(touches({"addresses"}, {"address"}));
  EXPECT_FALSE(touches({"lastLogin"}, {"name", "address.city"}));
  EXPECT_FALSE(touches({}, {"name"}));
}

TEST(change_event_test, an_element_named_by_index_touches_the_paths_through_its_array) {
  EXPECT_TRUE(touches({"items.0.status"}, {"items.status"}));  // positional $set
  EXPECT_TRUE(touches({"items.3"}, {"items.status"}));         // $push appends
  EXPECT_TRUE(touches({"o.0.i.1.q"}, {"o.i.q"}));              // nested $[]
  EXPECT_TRUE(touches({"items.0.status"}, {"items.0.status"}));
  EXPECT_TRUE(touches({"meta.0"}, {"meta.x"}));  // maybe {meta: {"0": ...}}: kept, to be safe
  EXPECT_FALSE(touches({"items.0.note"}, {"items.status"}));
  // Indexes are left out on both sides: more is kept than needed, nothing is missed.
  EXPECT_TRUE(touches({"items.1.status"}, {"items.0.status"}));
  EXPECT_FALSE(touches({"items.01.status"}, {"items.status"}));  // "01" is not an index
  EXPECT_FALSE(touches({"items.0.statuses"}, {"items.status"}));
}

}  // namespace
}  // namespace denormd::mapping
