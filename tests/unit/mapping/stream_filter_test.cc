// The server-side filter of a stream (planner::stream_filter), evaluated by the test server's
// query engine as MongoDB would evaluate the $match: it keeps exactly the updates the planner's
// own skip keeps (paths overlap in both directions, over updated, removed and truncated
// fields), every other event type, and drops deletes only where fills alone read the
// namespace. The projection after it trims documents to the fields the mappings read and
// leaves everything else of the event as it was.
#include <gtest/gtest.h>

#include <random>

#include "bson/json.h"
#include "mapping/planner.h"
#include "pipeline.h"
#include "query_operators.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::load;

// orders-customer copies name and address.city from customers into open orders, filling new
// orders (it reads orders' customerId and status).
const char* copy_with_fill = R"({"name":"oc","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId",
  "where":{"status":{"$ne":"DONE"}}},"into":"customer",
  "fields":{"name":"name","city":"address.city"},"fillNewTargets":true})";

class stream_filter_test : public ::testing::Test {
 protected:
  stream_filter_test() : planner_(load(copy_with_fill)) {}

  // Whether the filter of `source` keeps `event` (Extended JSON).
  bool keeps(const ns& source, const std::string& event) {
    const bson::array f = planner_.stream_filter(source);
    EXPECT_EQ(f.size(), 1u);
    const bson::document& match = f.at(0).as_document().get("$match")->as_document();
    auto m = mongo_emulator::engine::compile_query(match);
    EXPECT_TRUE(m) << bson::to_json(match);
    auto doc = bson::parse_json(event);
    EXPECT_TRUE(doc) << event;
    return m && doc && m->matches(*doc);
  }
  bool keeps_update(const ns& source, const std::string& updated, const std::string& removed = "[]",
                    const std::string& truncated = "[]") {
    return keeps(source, R"({"operationType":"update","updateDescription":{"updatedFields":)" +
                             updated + R"(,"removedFields":)" + removed + R"(,"truncatedArrays":)" +
                             truncated + "}}");
  }

  planner planner_;
  const ns customers{"shop", "customers"};
  const ns orders{"shop", "orders"};
};

TEST_F(stream_filter_test, keeps_the_updates_that_touch_a_watched_path_in_either_direction) {
  EXPECT_TRUE(keeps_update(customers, R"({"name":"x"})"));
  EXPECT_TRUE(keeps_update(customers, R"({"address.city":"x"})"));
  EXPECT_TRUE(keeps_update(customers, R"({"address":{"city":"x"}})"));  // a new sub-document
  EXPECT_TRUE(keeps_update(customers, R"({"address.city.zip":"x"})"));  // under a watched path
  EXPECT_TRUE(keeps_update(customers, R"({"lastLogin":1})", R"(["name"])"));  // removed
  EXPECT_TRUE(keeps_update(customers, "{}", "[]", R"([{"field":"name","newSize":1}])"));
  EXPECT_FALSE(keeps_update(customers, R"({"lastLogin":1})"));
  EXPECT_FALSE(keeps_update(customers, R"({"address.zip":"x"})"));
  EXPECT_FALSE(keeps_update(customers, R"({"names":"x","addressBook":1})"));  // not a prefix
  EXPECT_FALSE(keeps_update(customers, "{}"));
  // A path that looks like an operator or a variable is matched as text.
  EXPECT_FALSE(keeps_update(customers, R"({"$$f":1})"));
}

TEST_F(stream_filter_test, other_events_pass_and_deletes_only_where_a_source_is_read) {
  for (const char* op : {"insert", "replace", "delete", "invalidate", "drop", "rename"})
    EXPECT_TRUE(keeps(customers, std::string(R"({"operationType":")") + op + "\"}")) << op;
  // orders is read only to fill new orders: a delete there needs nothing.
  EXPECT_FALSE(keeps(orders, R"({"operationType":"delete"})"));
  EXPECT_TRUE(keeps(orders, R"({"operationType":"insert"})"));
  EXPECT_TRUE(keeps(orders, R"({"operationType":"drop"})"));
  EXPECT_TRUE(keeps_update(orders, R"({"status":"DONE"})"));
  EXPECT_TRUE(keeps_update(orders, R"({"customerId":7})"));
  EXPECT_FALSE(keeps_update(orders, R"({"customer.name":"x"})"));  // denormd's own echo
  EXPECT_TRUE(planner_.stream_filter({"shop", "nothing"}).empty());
}

TEST_F(stream_filter_test, the_server_keeps_an_update_exactly_when_the_planner_would_plan_it) {
  // Random dotted field names over a small alphabet, so that equal paths, prefixes and
  // near-prefixes all occur; the planner's own rule is touches(), over the same paths.
  const std::vector<std::string> parts{"name", "address", "city", "zip", "a", "names", "status"};
  std::mt19937 rng(15);
  auto field = [&] {
    std::string f = parts[rng() % parts.size()];
    for (unsigned n = rng() % 3; n > 0; --n)
      f += "." + parts[rng() % parts.size()];
    return f;
  };
  const std::vector<std::string> watched_customers{"address.city", "name"};
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> touched;
    std::string updated = "{";
    std::string removed = "[";
    for (unsigned n = rng() % 3; n > 0; --n) {
      const std::string f = field();
      touched.push_back(f);
      if (rng() % 2) {
        updated += std::string(updated.size() > 1 ? "," : "") + "\"" + f + "\":1";
      } else {
        removed += std::string(removed.size() > 1 ? "," : "") + "\"" + f + "\"";
      }
    }
    updated += "}";
    removed += "]";
    EXPECT_EQ(keeps_update(customers, updated, removed), touches(touched, watched_customers))
        << updated << " " << removed;
  }
}

// The event after the stream's projection, run by the test server's pipeline engine.
std::string projected(const planner& p, const ns& source, const std::string& event) {
  const bson::array stages = p.stream_projection(source);
  EXPECT_EQ(stages.size(), 1u);
  auto stage = mongo_emulator::engine::pipeline_stage::parse(stages.at(0));
  EXPECT_TRUE(stage) << bson::to_json(stages);
  auto doc = bson::parse_json(event);
  EXPECT_TRUE(doc) << event;
  if (!stage || !doc) return "";
  auto out = stage->transform(*doc);
  EXPECT_TRUE(out && *out);
  return out && *out ? bson::to_json(**out) : "";
}

TEST_F(stream_filter_test, the_projection_keeps_only_the_top_level_fields_mappings_read) {
  // Customers: the copied name and address (for address.city); _id always.
  EXPECT_EQ(projected(planner_, customers, R"({"_id":{"_data":"82"},"operationType":"update",
              "fullDocument":{"_id":7,"photo":"...","name":"Ann","address":{"city":"Oslo","zip":1},
              "lastLogin":3},"updateDescription":{"updatedFields":{"name":"Ann"},"removedFields":[]}})"),
            R"({"_id":{"_data":"82"},"operationType":"update",)"
            R"("fullDocument":{"_id":7,"name":"Ann","address":{"city":"Oslo","zip":1}},)"
            R"("updateDescription":{"updatedFields":{"name":"Ann"},"removedFields":[]}})");
  // Orders, filled as targets: customerId and status (the where clause); an array whole.
  EXPECT_EQ(projected(planner_, orders, R"({"operationType":"insert",
              "fullDocument":{"_id":1,"items":[1,2],"status":["A"],"customerId":7}})"),
            R"({"operationType":"insert","fullDocument":{"_id":1,"customerId":7,"status":["A"]}})");
}

TEST_F(stream_filter_test, the_projection_leaves_a_null_or_missing_document_as_it_is) {
  // A lookup that found nothing, a delete, and an event that is not about a document.
  EXPECT_EQ(projected(planner_, customers, R"({"operationType":"update","fullDocument":null})"),
            R"({"operationType":"update","fullDocument":null})");
  EXPECT_EQ(projected(planner_, customers, R"({"operationType":"delete","documentKey":{"_id":7}})"),
            R"({"operationType":"delete","documentKey":{"_id":7}})");
  EXPECT_EQ(projected(planner_, customers, R"({"operationType":"invalidate"})"),
            R"({"operationType":"invalidate"})");
  // A field whose value looks like an expression is copied, not evaluated.
  EXPECT_EQ(projected(planner_, customers, R"({"fullDocument":{"_id":1,"name":"$lastLogin"}})"),
            R"({"fullDocument":{"_id":1,"name":"$lastLogin"}})");
}

TEST(stream_projection_test, the_pre_image_is_trimmed_only_where_a_mapping_needs_it) {
  const planner p(load(R"({"name":"pr","kind":"aggregate","mode":"incremental",
    "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},
    "into":"rating","fields":{"n":{"$count":{}},"s":{"$sum":"stars"}},
    "fillNewTargets":true})"));
  const ns reviews{"shop", "reviews"};
  EXPECT_EQ(projected(p, reviews, R"({"fullDocumentBeforeChange":{"_id":1,"productId":2,
              "stars":3,"text":"long"},"fullDocument":{"_id":1,"productId":2,"stars":4,"text":"x"}})"),
            R"({"fullDocumentBeforeChange":{"_id":1,"stars":3,"productId":2},)"
            R"("fullDocument":{"_id":1,"stars":4,"productId":2}})");
  const planner copies(load(copy_with_fill));
  EXPECT_EQ(bson::to_json(copies.stream_projection(ns{"shop", "customers"}))
                .find("fullDocumentBeforeChange"),
            std::string::npos);
}

}  // namespace
}  // namespace denormd::mapping
