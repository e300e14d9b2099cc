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
#include "query/path.h"
#include "query_operators.h"
#include "test_helpers.h"
#include "test_support.h"
#include "update.h"

namespace denormd::mapping {
namespace {

using testing::load;

// orders-customer copies name and address.city from customers into open orders, filling new
// orders (it reads orders' customerId and status).
const char* copy_with_fill = R"({"name":"oc","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId",
  "where":{"status":{"$ne":"DONE"}}},"into":"customer",
  "fields":{"name":"name","city":"address.city"},"fillNewTargets":true})";

// The server-side filter of `p` for `source`, as the test server compiles it.
query::matcher server_filter(const planner& p, const ns& source) {
  const bson::array f = p.stream_filter(source);
  EXPECT_EQ(f.size(), 1u);
  if (f.size() != 1) return query::matcher();
  const bson::document& match = f.at(0).as_document().get("$match")->as_document();
  auto m = mongo_emulator::engine::compile_query(match);
  EXPECT_TRUE(m) << bson::to_json(match);
  return m ? *m : query::matcher();
}

// Whether the filter of `source` keeps `event` (Extended JSON).
bool keeps_in(const planner& p, const ns& source, const std::string& event) {
  auto doc = bson::parse_json(event);
  EXPECT_TRUE(doc) << event;
  return doc && server_filter(p, source).matches(*doc);
}

class stream_filter_test : public ::testing::Test {
 protected:
  stream_filter_test() : planner_(load(copy_with_fill)) {}

  bool keeps(const ns& source, const std::string& event) {
    return keeps_in(planner_, source, event);
  }
  bool keeps_update(const ns& source, const std::string& updated, const std::string& removed = "[]",
                    const std::string& truncated = "[]", const planner* p = nullptr) {
    return keeps_in(p != nullptr ? *p : planner_, source,
                    R"({"operationType":"update","updateDescription":{"updatedFields":)" + updated +
                        R"(,"removedFields":)" + removed + R"(,"truncatedArrays":)" + truncated +
                        "}}");
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

TEST_F(stream_filter_test, a_changed_array_element_touches_the_paths_through_its_array) {
  const planner p(load(R"({"name":"big","kind":"aggregate","mode":"recompute",
    "source":{"collection":"orders","parentKey":"customerId","filter":{"items.qty":{"$gte":5}}},
    "target":{"collection":"customers"},"into":"big","fields":{"n":{"$count":{}}}})"));
  auto kept = [&](const std::string& updated, const std::string& removed = "[]",
                  const std::string& truncated = "[]") {
    return keeps_update(orders, updated, removed, truncated, &p);
  };
  EXPECT_TRUE(kept(R"({"items.0.qty":7})"));      // positional $set
  EXPECT_TRUE(kept(R"({"items.3":{"qty":9}})"));  // $push appends
  EXPECT_TRUE(kept(R"({"items.12.qty.x":1})"));
  EXPECT_TRUE(kept("{}", R"(["items.1.qty"])"));
  EXPECT_TRUE(kept(R"({"items":[]})"));  // $pull, $pop: the whole array
  EXPECT_TRUE(kept("{}", "[]", R"([{"field":"items","newSize":1}])"));
  EXPECT_FALSE(kept(R"({"items.0.note":"x"})"));
  EXPECT_FALSE(kept(R"({"items.01.qty":7})"));  // "01" is a field name, not an index
  EXPECT_TRUE(kept(R"({"items.999999999.qty":7})"));
  EXPECT_FALSE(kept(R"({"items.1234567890.qty":7})"));  // ten digits: a field name
  EXPECT_FALSE(kept(R"({"items.\u00e91.qty":7,"items.1\u00e9.qty":7})"));
  EXPECT_FALSE(kept(R"({"items..qty":7})"));  // an empty name is not an index
  EXPECT_FALSE(kept(R"({"items.0.qtyx":7,"itemsqty":1})"));
}

// Generated updates through arrays (positional $set, $unset, $inc, $push, $pull, $pop, $[],
// $[id], `$`, numeric field names of a sub-document), applied by the test server's update
// engine, which reports updateDescription as MongoDB 6.0 does (indexed paths, appended
// elements, whole arrays). Whenever what a mapped path reaches, or a filter over it, changed,
// touches() must say so, and the server's filter must keep exactly what touches() keeps.
TEST(stream_filter_property_test, updates_through_arrays_touch_every_path_whose_value_changed) {
  const ns orders{"shop", "orders"};
  const std::vector<std::string> mapped{"items.status",  "items.qty",   "items.0.status", "items",
                                        "meta.0.status", "meta.status", "tags",           "total"};
  struct subject {
    std::string path;
    std::vector<std::string> watched;
    query::matcher filter;
    query::matcher server;
  };
  std::vector<subject> subjects;
  for (const auto& path : mapped) {
    const std::string filter = R"({")" + path + R"(":"A"})";
    auto mappings = load(R"({"name":"s","kind":"aggregate","mode":"recompute",
      "source":{"collection":"orders","parentKey":"customerId","filter":)" +
                         filter + R"(},"target":{"collection":"customers"},"into":"s",
      "fields":{"n":{"$count":{}}}})");
    ASSERT_EQ(mappings.size(), 1u);
    const std::vector<std::string> watched = mappings.front().watched_paths();
    const planner p(std::move(mappings));
    auto m = query::matcher::compile(*bson::parse_json(filter));
    ASSERT_TRUE(m);
    subjects.push_back({path, watched, *m, server_filter(p, orders)});
  }

  std::mt19937 rng(20240611);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  auto status = [&] { return std::string(pick(2) != 0u ? "\"A\"" : "\"B\""); };
  auto element = [&] {
    std::string e = "{";
    if (pick(4) != 0u) e += R"("status":)" + status() + ",";
    return e + R"("qty":)" + std::to_string(pick(10)) + "}";
  };
  auto elements = [&](std::size_t n) {
    std::string a = "[";
    for (std::size_t i = 0; i < n; ++i)
      a += (i > 0 ? "," : "") + element();
    return a + "]";
  };
  // Everything a path reaches, missing branches included, as text.
  auto reached = [](const bson::document& d, const std::string& path) {
    std::string out;
    query::resolve_branches(d, path, [&](const bson::value* v, std::optional<std::size_t>) {
      out += (v != nullptr ? bson::to_json(*v) : "missing") + ";";
      return true;
    });
    return out;
  };

  int changed_through_index = 0;
  int untouched = 0;
  for (int round = 0; round < 1500; ++round) {
    const std::size_t size = pick(4);
    const std::string before_json = R"({"_id":1,"customerId":1,"total":)" +
                                    std::to_string(pick(3)) + R"(,"items":)" + elements(size) +
                                    R"(,"meta":{"0":{"status":)" + status() + R"(},"status":)" +
                                    status() + R"(},"tags":["A","B"]})";
    const std::string i = std::to_string(pick(size + 1));  // one past the end appends
    std::string update;
    std::string filters = "[]";
    std::optional<std::size_t> positional;
    switch (pick(16)) {
      case 0:
        update = R"({"$set":{"items.)" + i + R"(.status":)" + status() + "}}";
        break;
      case 1:
        update = R"({"$inc":{"items.)" + i + R"(.qty":)" + std::to_string(pick(3)) + "}}";
        break;
      case 2:
        update = R"({"$unset":{"items.)" + i + R"(.status":""}})";
        break;
      case 3:
        update = R"({"$set":{"items.)" + i + R"(":)" + element() + "}}";
        break;
      case 4:
        update = R"({"$push":{"items":)" + element() + "}}";
        break;
      case 5:
        update = R"({"$push":{"items":{"$each":)" + elements(1 + pick(2)) +
                 (pick(2) != 0u ? R"(,"$position":0)" : "") + "}}}";
        break;
      case 6:
        update = R"({"$pull":{"items":{"status":)" + status() + "}}}";
        break;
      case 7:
        update = R"({"$pop":{"items":)" + std::string(pick(2) != 0u ? "1" : "-1") + "}}";
        break;
      case 8:
        update = R"({"$set":{"items.$[].status":)" + status() + "}}";
        break;
      case 9:
        update = R"({"$set":{"items.$[x].status":)" + status() + "}}";
        filters = R"([{"x.qty":{"$gte":)" + std::to_string(pick(10)) + "}}]";
        break;
      case 10:
        if (size == 0) continue;
        update = R"({"$set":{"items.$.status":)" + status() + "}}";
        positional = pick(size);
        break;
      case 11:
        update = R"({"$set":{"meta.)" + std::to_string(pick(2)) + R"(.status":)" + status() + "}}";
        break;
      case 12:
        update = R"({"$set":{"tags.)" + std::to_string(pick(3)) + R"(":)" + status() + "}}";
        break;
      case 13:
        update = R"({"$set":{"items.)" + i + R"(.note":"n","meta.status":)" + status() + "}}";
        break;
      case 14:
        update = R"({"$set":{"items":)" + elements(pick(3)) + "}}";
        break;
      default:
        update = R"({"$set":{"total":)" + std::to_string(pick(3)) + "}}";
        break;
    }
    const bson::document before = *bson::parse_json(before_json);
    auto spec = mongo_emulator::engine::parse_update(
        *bson::parse_json(update), mongo_emulator::engine::testing::documents(filters));
    ASSERT_TRUE(spec) << update << ": " << spec.error().message;
    bson::document after;
    mongo_emulator::engine::update_context ctx;
    ctx.positional = positional;
    auto description = mongo_emulator::engine::apply_update(*spec, before, after, ctx);
    if (!description || description->empty()) continue;  // refused (a null element), or no-op
    ASSERT_FALSE(description->replaced);
    const std::string event = R"({"_id":{"_data":"01"},"operationType":"update",
      "clusterTime":{"$timestamp":{"t":1,"i":1}},"ns":{"db":"shop","coll":"orders"},
      "documentKey":{"_id":1},"fullDocument":)" +
                              bson::to_json(after) + R"(,"updateDescription":)" +
                              bson::to_json(description->to_document()) + "}";
    const change_event ev = testing::event(event);
    const bson::document raw = *bson::parse_json(event);
    const bool by_index = std::any_of(ev.touched.begin(), ev.touched.end(), [](const auto& t) {
      return query::field_components(t).size() !=
             static_cast<std::size_t>(std::count(t.begin(), t.end(), '.')) + 1;
    });
    for (const subject& s : subjects) {
      const bool changed = reached(before, s.path) != reached(after, s.path) ||
                           s.filter.matches(before) != s.filter.matches(after);
      const bool touched = touches(ev.touched, s.watched);
      EXPECT_TRUE(!changed || touched)
          << s.path << " changed, not touched: " << before_json << " " << update;
      EXPECT_EQ(s.server.matches(raw), touched) << s.path << ": " << event;
      if (changed && by_index) ++changed_through_index;
      if (!touched) ++untouched;
    }
  }
  // Both sides of the rule occurred often enough to mean something.
  EXPECT_GT(changed_through_index, 300);
  EXPECT_GT(untouched, 1000);
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
