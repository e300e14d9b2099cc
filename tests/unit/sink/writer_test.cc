// The writer's policy over a fake client: ops of one mapping go out as one ordered bulk in plan
// order, a refill or fill runs after what was planned before it (consecutive fills together), a
// statement the server refuses for good becomes a dead letter while the rest goes on, a refused
// multi-document statement is retried one document at a time, and a transient error is returned
// untouched.
#include "sink/writer.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "bson/json.h"
#include "config/mapping_loader.h"

namespace denormd::sink {
namespace {

std::vector<mapping::mapping> load(const std::string& json) {
  auto r = config::parse_mapping("test.json", json, "shop");
  EXPECT_TRUE(r.has_value());
  return r ? std::move(r).value() : std::vector<mapping::mapping>{};
}

const std::string copy_json = R"({"name":"oc","kind":"copy",
  "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
  "into":"customer","fields":{"name":"name"}})";
const std::string recent_json = R"({"name":"rr","kind":"recent",
  "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},
  "into":"recent","fields":{"id":"_id","at":"at"},"idField":"id","sort":{"at":-1},"limit":2})";

bson::document doc(const std::string& json) {
  auto d = bson::parse_json(json);
  EXPECT_TRUE(d.has_value()) << json;
  return d ? *d : bson::document{};
}

mongo::driver_error refused(std::uint32_t code) {
  return mongo::driver_error{mongo::driver_error::origin::server, code, "refused", {}};
}

// Records every call as one line ("bulk shop.orders [<filter> <update>, ...]", "find ...",
// "insert ..."); each bulk's outcome comes from `outcomes` in order (all applied when empty);
// finds return the documents of `collections` (the filter is not evaluated).
class fake_client final : public mongo::document_client {
 public:
  std::vector<std::string> calls;
  std::deque<mongo::result<mongo::bulk_outcome>> outcomes;
  std::map<std::string, std::vector<bson::document>> collections;
  std::vector<bson::document> inserted;

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool ordered) override {
    EXPECT_TRUE(ordered);
    std::string line = "bulk " + db + "." + coll + " [";
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (i > 0) line += ", ";
      line += (requests[i].multi ? "many " : "") + bson::to_json(*requests[i].filter) + " " +
              bson::to_json(*requests[i].update);
    }
    calls.push_back(line + "]");
    if (outcomes.empty()) {
      mongo::bulk_outcome all;
      all.matched = all.modified = static_cast<std::int64_t>(requests.size());
      return all;
    }
    auto next = std::move(outcomes.front());
    outcomes.pop_front();
    return next;
  }
  mongo::status insert_one(const std::string& db, const std::string& coll,
                           const bson::document& d) override {
    calls.push_back("insert " + db + "." + coll);
    inserted.push_back(d);
    return {};
  }
  mongo::status find_each(const std::string& db, const std::string& coll,
                          const bson::document& filter, const mongo::find_options&,
                          const std::function<bool(bson::document&&)>& each) override {
    calls.push_back("find " + db + "." + coll + " " + bson::to_json(filter));
    for (auto d : collections[coll]) {
      if (!each(std::move(d))) break;
    }
    return {};
  }
  mongo::result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                                  const bson::document& filter,
                                                  const mongo::find_options&) override {
    calls.push_back("find " + db + "." + coll + " " + bson::to_json(filter));
    return collections[coll];
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string& db,
                                                        const std::string& coll,
                                                        const bson::document& filter) override {
    calls.push_back("find_one " + db + "." + coll + " " + bson::to_json(filter));
    if (collections[coll].empty()) return std::optional<bson::document>{};
    return std::optional<bson::document>(collections[coll].front());
  }
  mongo::result<std::vector<bson::document>> aggregate(const std::string& db,
                                                       const std::string& coll,
                                                       const bson::array& pipeline) override {
    calls.push_back("aggregate " + db + "." + coll + " " + bson::to_json(pipeline));
    return aggregate_results;
  }
  mongo::result<snapshot_results> aggregate_snapshot(const std::string& db, const std::string& coll,
                                                     const bson::array& pipeline) override {
    calls.push_back("aggregate snapshot " + db + "." + coll + " " + bson::to_json(pipeline));
    return snapshot_results{aggregate_results, bson::timestamp{100, 1}};
  }
  std::vector<bson::document> aggregate_results;
};

// An update of the orders of customer `key` (as the copy kind plans it, simplified).
mapping::write_op set_name(const mapping::mapping& m, int key, const std::string& name,
                           bool many = true) {
  mapping::write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  mapping::update_write w;
  w.many = many;
  w.filter = bson::document{{"customerId", bson::document{{"$eq", key}}}};
  w.update = bson::document{{"$set", bson::document{{"customer.name", name}}}};
  op.what = std::move(w);
  op.merge = mapping::merge_rule::last_wins;
  op.merge_key = key;
  return op;
}

mongo::bulk_outcome failed_at(std::size_t index, std::uint32_t code) {
  mongo::bulk_outcome out;
  out.matched = out.modified = static_cast<std::int64_t>(index);
  out.failed_index = index;
  out.write_error = refused(code);
  return out;
}

class writer_test : public ::testing::Test {
 protected:
  writer_test() : metrics_("test") {}
  writer make() { return writer(client_, metrics_, writer_options{"meta", false}); }

  fake_client client_;
  metrics::metrics metrics_;
  const mapping::ns source_{"shop", "customers"};
  const std::vector<bson::document> tokens_{doc(R"({"_data":"t0"})"), doc(R"({"_data":"t1"})")};
};

TEST_F(writer_test, the_ops_of_each_mapping_are_one_ordered_bulk_in_plan_order) {
  auto copies = load(copy_json);
  auto other = load(R"({"name":"oc2","kind":"copy",
    "source":{"collection":"customers"},"target":{"collection":"invoices","key":"customerId"},
    "into":"customer","fields":{"name":"name"}})");
  auto to_invoices = set_name(other.front(), 1, "a");
  to_invoices.target = other.front().target;
  const std::vector<mapping::write_op> ops{set_name(copies.front(), 1, "a"), to_invoices,
                                           set_name(copies.front(), 2, "b")};
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 2u);
  EXPECT_EQ(client_.calls[0],
            R"(bulk shop.orders [many {"customerId":{"$eq":1}} {"$set":{"customer.name":"a"}}, )"
            R"(many {"customerId":{"$eq":2}} {"$set":{"customer.name":"b"}}])");
  EXPECT_EQ(client_.calls[1],
            R"(bulk shop.invoices [many {"customerId":{"$eq":1}} {"$set":{"customer.name":"a"}}])");
  EXPECT_TRUE(w.rejected().empty());
}

TEST_F(writer_test, a_refused_statement_is_a_dead_letter_and_the_rest_goes_on) {
  auto m = load(copy_json);
  std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a", false),
                                     set_name(m.front(), 2, "b", false),
                                     set_name(m.front(), 3, "c", false)};
  ops[1].event = 1;
  client_.outcomes.push_back(failed_at(1, 17419));  // the second is too large
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 3u);
  EXPECT_EQ(client_.calls[1], "insert meta.denormd_deadletters");
  // The statements after the refused one run in a bulk of their own.
  EXPECT_EQ(client_.calls[2],
            R"(bulk shop.orders [{"customerId":{"$eq":3}} {"$set":{"customer.name":"c"}}])");
  ASSERT_EQ(client_.inserted.size(), 1u);
  const bson::document& letter = client_.inserted.front();
  EXPECT_EQ(letter.get("mapping")->as_string(), "oc");
  EXPECT_EQ(letter.get("source")->as_string(), "shop.customers");
  EXPECT_EQ(bson::to_json(*letter.get("token")), R"({"_data":"t1"})");
  EXPECT_EQ(bson::to_json(*letter.get("filter")), R"({"customerId":{"$eq":2}})");
  EXPECT_EQ(bson::to_json(*letter.get("error")), R"({"code":17419,"message":"refused"})");
  ASSERT_EQ(w.rejected().size(), 1u);
  EXPECT_EQ(w.rejected().front(), &ops[1]);
  EXPECT_EQ(w.refused_writes(), 1u);
}

TEST_F(writer_test, a_transient_error_is_returned_and_nothing_becomes_a_dead_letter) {
  auto m = load(copy_json);
  const std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a")};
  client_.outcomes.push_back(mongo::failure(
      mongo::driver_error{mongo::driver_error::origin::network, 0, "connection reset", {}}));
  auto w = make();
  auto st = w.apply(ops, tokens_, source_);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "connection reset");
  client_.outcomes.push_back(failed_at(0, 91));  // a transient write error (shutting down)
  st = w.apply(ops, tokens_, source_);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, 91u);
  EXPECT_TRUE(client_.inserted.empty());
}

TEST_F(writer_test, a_refused_multi_document_write_is_retried_document_by_document) {
  auto m = load(copy_json);
  const std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a")};
  for (int id : {10, 11, 12})
    client_.collections["orders"].push_back(bson::document{{"_id", id}});
  client_.outcomes.push_back(failed_at(0, 17419));  // one of the three orders is too large
  client_.outcomes.push_back(failed_at(1, 17419));  // ...order 11, alone
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 5u);
  EXPECT_EQ(client_.calls[1], R"(find shop.orders {"customerId":{"$eq":1}})");
  EXPECT_EQ(client_.calls[2],
            R"(bulk shop.orders [{"$and":[{"_id":{"$eq":10}},{"customerId":{"$eq":1}}]} )"
            R"({"$set":{"customer.name":"a"}}, )"
            R"({"$and":[{"_id":{"$eq":11}},{"customerId":{"$eq":1}}]} )"
            R"({"$set":{"customer.name":"a"}}, )"
            R"({"$and":[{"_id":{"$eq":12}},{"customerId":{"$eq":1}}]} )"
            R"({"$set":{"customer.name":"a"}}])");
  EXPECT_EQ(client_.calls[3], "insert meta.denormd_deadletters");
  EXPECT_EQ(client_.calls[4],
            R"(bulk shop.orders [{"$and":[{"_id":{"$eq":12}},{"customerId":{"$eq":1}}]} )"
            R"({"$set":{"customer.name":"a"}}])");
  // The dead letter names the one document, the op is rejected once.
  ASSERT_EQ(client_.inserted.size(), 1u);
  EXPECT_EQ(bson::to_json(*client_.inserted.front().get("filter")),
            R"({"$and":[{"_id":{"$eq":11}},{"customerId":{"$eq":1}}]})");
  ASSERT_EQ(w.rejected().size(), 1u);
  EXPECT_EQ(w.rejected().front(), &ops[0]);
  EXPECT_EQ(w.refused_writes(), 1u);
}

TEST_F(writer_test, a_huge_fan_out_is_retried_a_thousand_documents_at_a_time) {
  auto m = load(copy_json);
  const std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a")};
  for (int id = 0; id < 2500; ++id)
    client_.collections["orders"].push_back(bson::document{{"_id", id}});
  client_.outcomes.push_back(failed_at(0, 17419));
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 5u);  // the bulk, the find, and three chunks
  for (std::size_t i = 2; i < 5; ++i)
    EXPECT_TRUE(client_.calls[i].starts_with("bulk shop.orders [")) << client_.calls[i];
  EXPECT_TRUE(w.rejected().empty());
}

TEST_F(writer_test, a_refill_runs_after_the_writes_planned_before_it) {
  auto m = load(recent_json);
  const auto& k = std::get<mapping::recent_kind>(m.front().kind);
  mapping::write_op push;
  push.source_mapping = &m.front();
  push.target = m.front().target;
  mapping::update_write u;
  u.filter = doc(R"({"_id":{"$eq":1}})");
  u.update = doc(R"({"$push":{"recent":{"$each":[{"id":5}]}}})");
  push.what = u;
  const std::vector<mapping::write_op> ops{
      push, k.refill(m.front(), doc(R"({"_id":{"$eq":2}})"), mapping::merge_rule::mapping_barrier),
      push};
  client_.collections["products"].push_back(doc(R"({"_id":2})"));
  client_.collections["reviews"].push_back(doc(R"({"_id":7,"productId":2,"at":3})"));
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 5u);
  EXPECT_TRUE(client_.calls[0].starts_with("bulk shop.products [{\"_id\":{\"$eq\":1}}"));
  EXPECT_EQ(client_.calls[1], R"(find shop.products {"_id":{"$eq":2}})");
  EXPECT_EQ(client_.calls[2],
            R"(find shop.reviews {"productId":{"$eq":2,"$not":{"$type":"array"}}})");
  EXPECT_EQ(client_.calls[3],
            R"(bulk shop.products [{"_id":{"$eq":2}} {"$set":{"recent":[{"id":7,"at":3}]}}])");
  EXPECT_TRUE(client_.calls[4].starts_with("bulk shop.products [{\"_id\":{\"$eq\":1}}"));
}

// The fill new order `order` naming customer `key` needs (as the copy kind plans it).
mapping::write_op fill(const mapping::mapping& m, int order, int key) {
  mapping::write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = mapping::fill_write{bson::document{{"_id", bson::document{{"$eq", order}}}},
                                {},
                                mapping::fill_query{m.source, "_id", key}};
  return op;
}

TEST_F(writer_test, consecutive_fills_share_their_reads_and_writes_and_keep_their_place) {
  auto m = load(copy_json);
  std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a"), fill(m.front(), 10, 7),
                                     fill(m.front(), 11, 8), set_name(m.front(), 2, "b")};
  ops[2].event = 1;
  client_.collections["customers"] = {doc(R"({"_id":7,"name":"A"})"),
                                      doc(R"({"_id":8,"name":"B"})")};
  mongo::bulk_outcome one;
  one.matched = one.modified = 1;
  client_.outcomes.push_back(one);
  client_.outcomes.push_back(failed_at(1, 17419));  // order 11 is too large
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  const std::vector<std::string> expected{
      R"(bulk shop.orders [many {"customerId":{"$eq":1}} {"$set":{"customer.name":"a"}}])",
      R"(find shop.customers {"_id":{"$in":[7,8]}})",
      R"(bulk shop.orders [{"_id":{"$eq":10}} {"$set":{"customer.name":"A"}}, )"
      R"({"_id":{"$eq":11}} {"$set":{"customer.name":"B"}}])",
      "insert meta.denormd_deadletters",
      R"(find shop.customers {"_id":{"$in":[7]}})",  // again, for the fill applied
      R"(bulk shop.orders [many {"customerId":{"$eq":2}} {"$set":{"customer.name":"b"}}])"};
  EXPECT_EQ(client_.calls, expected);
  ASSERT_EQ(client_.inserted.size(), 1u);
  EXPECT_EQ(bson::to_json(*client_.inserted[0].get("token")), R"({"_data":"t1"})");
  EXPECT_EQ(bson::to_json(*client_.inserted[0].get("filter")), R"({"_id":{"$eq":11}})");
  ASSERT_EQ(w.rejected().size(), 1u);
  EXPECT_EQ(w.rejected().front(), &ops[2]);
}

TEST_F(writer_test, a_recompute_writes_its_parents_in_one_bulk_and_a_refused_one_is_a_letter) {
  auto m = load(R"({"name":"pr","kind":"aggregate",
    "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},
    "into":"rating","fields":{"n":{"$count":{}}}})");
  const auto& k = std::get<mapping::aggregate_kind>(m.front().kind);
  for (int id = 1; id <= 3; ++id)
    client_.collections["products"].push_back(doc("{\"_id\":" + std::to_string(id) + "}"));
  client_.aggregate_results = {doc(R"({"_id":1,"v0":2})"), doc(R"({"_id":3,"v0":1})")};
  client_.outcomes.push_back(failed_at(1, 17419));  // parent 2's update is refused
  auto w = make();
  const std::vector<mapping::write_op> ops{k.recompute(m.front(), bson::array{1, 2, 3})};
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls.size(), 5u);
  EXPECT_EQ(client_.calls[0], R"(find shop.products {"_id":{"$in":[1,2,3]}})");
  EXPECT_TRUE(client_.calls[1].starts_with("aggregate shop.reviews "));
  EXPECT_EQ(
      client_.calls[2],
      R"(bulk shop.products [{"_id":{"$eq":1}} {"$set":{"rating.n":2}}, )"
      R"({"_id":{"$eq":2}} {"$set":{"rating.n":0}}, {"_id":{"$eq":3}} {"$set":{"rating.n":1}}])");
  EXPECT_EQ(client_.calls[3], "insert meta.denormd_deadletters");
  EXPECT_EQ(client_.calls[4], R"(bulk shop.products [{"_id":{"$eq":3}} {"$set":{"rating.n":1}}])");
  ASSERT_EQ(client_.inserted.size(), 1u);
  EXPECT_NE(bson::to_json(client_.inserted[0]).find(R"("_id":{"$eq":2})"), std::string::npos);
  EXPECT_EQ(w.refused_writes(), 1u);
}

TEST_F(writer_test, a_planned_dead_letter_writes_nothing_but_the_letter) {
  auto m = load(copy_json);
  const std::vector<mapping::write_op> ops{
      mapping::dead_letter_op(m.front(), "source key _id is {\"$ne\":null}: not a reference")};
  auto w = make();
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  ASSERT_EQ(client_.calls, std::vector<std::string>{"insert meta.denormd_deadletters"});
  EXPECT_EQ(bson::to_json(*client_.inserted.front().get("error")),
            R"({"reason":"source key _id is {\"$ne\":null}: not a reference"})");
  EXPECT_EQ(w.rejected().size(), 1u);
  EXPECT_EQ(w.refused_writes(), 0u);  // not refused by the server
}

TEST_F(writer_test, each_event_counts_once_in_the_fan_out_with_its_share_of_the_bulk) {
  auto m = load(copy_json);
  // Three ops of two events: the bulk matched 12 documents, six per event.
  std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a"), set_name(m.front(), 2, "b"),
                                     set_name(m.front(), 3, "c")};
  ops[1].event = 1;
  ops[2].event = 1;
  mongo::bulk_outcome matched;
  matched.matched = 12;
  client_.outcomes.push_back(matched);
  writer_options observing{"meta", false};
  observing.observe_fanout = true;
  writer w(client_, metrics_, observing);
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  const auto f = metrics_.fanout("oc");
  EXPECT_EQ(f.count, 2u);
  EXPECT_DOUBLE_EQ(f.sum, 12.0);
  EXPECT_NE(metrics_.serialize().find("denormd_fanout_bucket{mapping=\"oc\",le=\"5\"} 0"),
            std::string::npos)
      << metrics_.serialize();
  EXPECT_NE(metrics_.serialize().find("denormd_fanout_bucket{mapping=\"oc\",le=\"10\"} 2"),
            std::string::npos);
}

TEST_F(writer_test, a_backfills_writes_and_held_ones_are_no_fan_out_until_published) {
  auto m = load(copy_json);
  const std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a")};
  // Not the daemon's events (a backfill, a verify): nothing observed.
  ASSERT_TRUE(make().apply(ops, tokens_, source_));
  EXPECT_EQ(metrics_.fanout("oc").count, 0u);
  // In a transaction: held until published, and nothing when cleared (aborted).
  writer_options held{"meta", false};
  held.observe_fanout = true;
  held.hold_metrics = true;
  writer w(client_, metrics_, held);
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  EXPECT_EQ(metrics_.fanout("oc").count, 0u);
  w.tally().publish();
  EXPECT_EQ(metrics_.fanout("oc").count, 1u);
  EXPECT_DOUBLE_EQ(metrics_.fanout("oc").sum, 1.0);
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  w.tally().clear();
  w.tally().publish();
  EXPECT_EQ(metrics_.fanout("oc").count, 1u);
}

TEST_F(writer_test, a_dry_run_sends_nothing) {
  auto m = load(copy_json);
  writer w(client_, metrics_, writer_options{"meta", true});
  const std::vector<mapping::write_op> ops{set_name(m.front(), 1, "a")};
  ASSERT_TRUE(w.apply(ops, tokens_, source_));
  EXPECT_TRUE(client_.calls.empty());
}

}  // namespace
}  // namespace denormd::sink
