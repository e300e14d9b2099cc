#include "mapping/computed_fields.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "mapping/computed_expression.h"
#include "mapping/planner.h"
#include "test_helpers.h"

namespace denormd::mapping {
namespace {

using testing::event;
using testing::load;

std::string copy_with(const std::string& fields) {
  return R"({"name":"oc","kind":"copy","source":{"collection":"customers"},
    "target":{"collection":"orders","key":"customerId"},"into":"customer","fields":)" +
         fields + "}";
}

std::string load_errors(const std::string& text) {
  auto r = config::parse_mapping("m.json", text, "shop");
  if (r) return "";
  std::string out;
  for (const auto& e : r.error())
    out += e.to_string() + "\n";
  return out;
}

const char* display = R"({"name":"name","display":{"$concat":["$name"," <","$email",">"]},
  "city":{"$toUpper":{"$ifNull":["$address.city","unknown"]}}})";

TEST(computed_fields_test,
     a_field_may_be_an_expression_whose_value_is_read_from_the_computed_root) {
  const auto ms = load(copy_with(display));
  ASSERT_EQ(ms.size(), 1u);
  const field_map* f = ms[0].field_named("display");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->computed);
  EXPECT_EQ(f->source_path, f->computed->value_path());
  EXPECT_TRUE(f->source_path.starts_with("__denormd_computed.c"));
  EXPECT_FALSE(ms[0].field_named("name")->computed);
  EXPECT_TRUE(ms[0].has_computed_fields());
}

TEST(computed_fields_test, watching_follows_the_paths_an_expression_reads) {
  const auto ms = load(copy_with(display));
  const auto watched = ms[0].watched_paths();
  for (const char* p : {"name", "email", "address.city"})
    EXPECT_NE(std::find(watched.begin(), watched.end(), p), watched.end()) << p;
  for (const auto& p : watched)
    EXPECT_FALSE(p.starts_with("__denormd")) << p;
  const planner plan(load(copy_with(display)));
  // An update of the email alone rewrites the copies (display reads it); another field not.
  std::vector<write_op> ops;
  plan.plan(
      event(R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":1},"updateDescription":{"updatedFields":{"email":"a@b"},"removedFields":[]},
    "fullDocument":{"_id":1,"name":"A","email":"a@b"}})"),
      ops);
  EXPECT_EQ(ops.size(), 1u);
  ops.clear();
  plan.plan(
      event(R"({"_id":{"_data":"2"},"operationType":"update","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":1},"updateDescription":{"updatedFields":{"other":1},"removedFields":[]},
    "fullDocument":{"_id":1,"name":"A","email":"a@b","other":1}})"),
      ops);
  EXPECT_TRUE(ops.empty());
  // The server-side filter watches the same paths, and trims documents to the fields read.
  const std::string filter =
      bson::to_json(bson::document{{"f", plan.stream_filter({"shop", "customers"})}});
  EXPECT_NE(filter.find("email"), std::string::npos);
  EXPECT_EQ(filter.find("__denormd"), std::string::npos);
  const auto& fields = plan.document_fields({"shop", "customers"});
  EXPECT_NE(std::find(fields.begin(), fields.end(), "address"), fields.end());
  EXPECT_FALSE(plan.reads_whole_document({"shop", "customers"}));
}

TEST(computed_fields_test, an_expression_of_the_whole_document_watches_every_update) {
  const planner plan(load(copy_with(R"({"gone":{"$eq":["$$ROOT",null]}})")));
  EXPECT_TRUE(plan.reads_whole_document({"shop", "customers"}));
  EXPECT_TRUE(plan.stream_projection({"shop", "customers"}).empty());
  const std::string filter =
      bson::to_json(bson::document{{"f", plan.stream_filter({"shop", "customers"})}});
  EXPECT_EQ(filter.find("$expr"), std::string::npos) << filter;
  std::vector<write_op> ops;
  plan.plan(
      event(R"({"_id":{"_data":"1"},"operationType":"update","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":1},"updateDescription":{"updatedFields":{"anything":1},"removedFields":[]},
    "fullDocument":{"_id":1,"anything":1}})"),
      ops);
  EXPECT_EQ(ops.size(), 1u);
}

TEST(computed_fields_test, a_failed_expression_is_a_dead_letter_of_the_mapping_that_wrote_from_it) {
  const planner plan(load(copy_with(display)));
  const computed_fields* fields = plan.computed({"shop", "customers"});
  ASSERT_NE(fields, nullptr);
  ASSERT_EQ(fields->entries().size(), 2u);
  auto ev =
      event(R"({"_id":{"_data":"1"},"operationType":"insert","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":7},"fullDocument":{"_id":7,"name":"A"}})");
  const std::string key = fields->entries()[0].expression->key();
  ev.computed_failures.push_back({key, "boom (code 241)", false});
  std::vector<write_op> ops;
  plan.plan(ev, ops);
  ASSERT_EQ(ops.size(), 2u);
  const auto* letter = ops[1].as<dead_letter_write>();
  ASSERT_NE(letter, nullptr);
  EXPECT_NE(letter->reason.find("computed field \"display\""), std::string::npos) << letter->reason;
  EXPECT_NE(letter->reason.find("document 7"), std::string::npos) << letter->reason;
  EXPECT_NE(letter->reason.find("boom (code 241)"), std::string::npos) << letter->reason;
  // The copy itself goes on: display is absent from the source, so it is unset.
  const auto* update = ops[0].as<update_write>();
  ASSERT_NE(update, nullptr);
  EXPECT_NE(bson::to_json(update->update).find("\"$unset\":{\"customer.display\""),
            std::string::npos)
      << bson::to_json(update->update);
}

TEST(computed_fields_test, the_server_is_sent_only_the_fields_read_as_literal_data) {
  const planner plan(load(copy_with(display)));
  const computed_fields* fields = plan.computed({"shop", "customers"});
  ASSERT_NE(fields, nullptr);
  auto doc = bson::parse_json(
      R"({"_id":1,"name":"$where","email":"e","address":{"city":"x"},"secret":"s"})");
  ASSERT_TRUE(doc);
  const bson::document in = fields->input(*doc);
  EXPECT_EQ(bson::to_json(in), R"({"_id":1,"email":"e","name":"$where","address":{"city":"x"}})");
  const std::string projection = bson::to_json(fields->projection());
  EXPECT_NE(projection.find("\"_id\":0"), std::string::npos);
  EXPECT_NE(projection.find("$concat"), std::string::npos);
  computed_fields::put(*doc, bson::document{{"c1", "v"}});
  EXPECT_EQ(bson::to_json(*doc->get("__denormd_computed")), R"({"c1":"v"})");
}

TEST(computed_fields_test, one_expression_in_two_mappings_is_evaluated_once) {
  auto ms = load(copy_with(R"({"u":{"$toUpper":"$name"}})"));
  auto more = load(R"({"name":"inv","kind":"copy","source":{"collection":"customers"},
    "target":{"collection":"invoices","key":"c"},"fields":{"n":{"$toUpper":"$name"}}})");
  ms.push_back(std::move(more.front()));
  const planner plan(std::move(ms));
  const computed_fields* fields = plan.computed({"shop", "customers"});
  ASSERT_NE(fields, nullptr);
  ASSERT_EQ(fields->entries().size(), 1u);
  EXPECT_EQ(fields->entries()[0].owners.size(), 2u);
}

TEST(computed_fields_test, the_fingerprint_covers_the_expression) {
  const auto a = load(copy_with(R"({"d":{"$toUpper":"$name"}})"));
  const auto b = load(copy_with(R"({"d":{"$toLower":"$name"}})"));
  const auto c = load(copy_with(R"({"d":"name"})"));
  ASSERT_FALSE(a.empty() || b.empty() || c.empty());
  EXPECT_NE(a[0].fingerprint(), b[0].fingerprint());
  EXPECT_NE(a[0].fingerprint(), c[0].fingerprint());
  EXPECT_EQ(a[0].fingerprint(), load(copy_with(R"({"d":{"$toUpper":"$name"}})"))[0].fingerprint());
}

TEST(computed_fields_test, loading_refuses_bad_expressions_and_reserved_paths_naming_the_pointer) {
  EXPECT_NE(load_errors(copy_with(R"({"d":{"$toUper":"$name"}})")).find("/fields/d/$toUper"),
            std::string::npos);
  EXPECT_NE(load_errors(copy_with(R"({"d":{"$rand":{}}})")).find("/fields/d"), std::string::npos);
  EXPECT_NE(load_errors(copy_with(R"({"d":"__denormd_computed.c1"})"))
                .find("/fields/d: \"__denormd_computed.c1\" is not a valid field path"),
            std::string::npos);
  EXPECT_NE(load_errors(copy_with(R"({"d":{"$toUpper":"$__denormd_computed.c1"}})"))
                .find("/fields/d: the expression reads \"$__denormd_computed.c1\""),
            std::string::npos);
  const std::string recent = R"({"name":"rr","kind":"recent",
    "source":{"collection":"reviews","parentKey":"productId"},"target":{"collection":"products"},
    "into":"recent","fields":{"id":"_id","at":{"$toLong":"$at"}},"idField":"id",
    "sort":{"at":-1},"limit":2})";
  EXPECT_NE(load_errors(recent).find("/sort/at: sort field \"at\" is computed"), std::string::npos)
      << load_errors(recent);
  const std::string aggregate = R"({"name":"ag","kind":"aggregate",
    "source":{"collection":"lines","parentKey":"customerId"},"target":{"collection":"customers"},
    "into":"spent","fields":{"total":{"$sum":{"$multiplyy":["$q","$p"]}}}})";
  EXPECT_NE(load_errors(aggregate).find("/fields/total/$sum/$multiplyy"), std::string::npos)
      << load_errors(aggregate);
}

TEST(computed_fields_test, an_aggregate_puts_its_expression_into_group) {
  const auto ms = load(R"({"name":"ag","kind":"aggregate",
    "source":{"collection":"lines","parentKey":"customerId"},"target":{"collection":"customers"},
    "into":"spent","fields":{"total":{"$sum":{"$multiply":["$q","$p"]}}}})");
  ASSERT_EQ(ms.size(), 1u);
  const auto* k = ms[0].as<aggregate_kind>();
  ASSERT_NE(k, nullptr);
  const std::string pipeline = bson::to_json(bson::document{{"p", k->pipeline({})}});
  EXPECT_NE(pipeline.find(R"({"$sum":{"$multiply":["$q","$p"]}})"), std::string::npos) << pipeline;
  EXPECT_EQ(pipeline.find("__denormd"), std::string::npos) << pipeline;
}

}  // namespace
}  // namespace denormd::mapping
