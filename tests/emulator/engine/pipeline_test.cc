#include "pipeline.h"

#include "test_support.h"

#include <set>
#include <string>

namespace mongo_emulator::engine::testing {
namespace {

std::string run(const char* stages, const char* input) {
  auto p = parse_pipeline(array(stages));
  EXPECT_TRUE(p) << stages << ": " << (p ? "" : p.error().message);
  if (!p) return {};
  auto out = run_pipeline(*p, documents(input));
  EXPECT_TRUE(out) << stages << ": " << (out ? "" : out.error().message);
  if (!out) return {};
  denormd::bson::array items;
  for (auto& d : *out)
    items.emplace_back(std::move(d));
  return json(denormd::bson::document{{"out", items}});
}

std::string out(const char* json_array) {
  return json(doc(std::string(R"({"out": )") + json_array + "}"));
}

void expect_parse_error(const char* stages, int code, const char* message) {
  SCOPED_TRACE(stages);
  auto p = parse_pipeline(array(stages));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, code) << p.error().message;
  if (message != nullptr) {
    EXPECT_EQ(p.error().message, message);
  }
}

const char* const orders = R"([
  {"_id": 1, "cust": "a", "qty": 2, "tags": ["x", "y"]},
  {"_id": 2, "cust": "b", "qty": 5},
  {"_id": 3, "cust": "a", "qty": 1.5, "tags": []},
  {"_id": 4, "cust": "c", "qty": "n/a"},
  {"_id": 5, "cust": "a"}
])";

TEST(pipeline, match_sort_skip_limit) {
  EXPECT_EQ(run(R"([{"$match": {"cust": "a"}}, {"$sort": {"_id": -1}}, {"$skip": 1},
                    {"$limit": 1}, {"$project": {"_id": 1}}])",
                orders),
            out(R"([{"_id": 3}])"));
  EXPECT_EQ(run(R"([{"$sort": {"qty": 1}}, {"$project": {"_id": 1}}])", orders),
            out(R"([{"_id": 5}, {"_id": 3}, {"_id": 1}, {"_id": 2}, {"_id": 4}])"));
  EXPECT_EQ(run(R"([{"$limit": 100}])", "[]"), out("[]"));
}

TEST(pipeline, group) {
  EXPECT_EQ(run(R"([{"$group": {"_id": null, "n": {"$sum": 1}}}])", orders),
            out(R"([{"_id": null, "n": 5}])"));
  EXPECT_EQ(run(R"([{"$group": {"_id": "$cust", "total": {"$sum": "$qty"}, "n": {"$count": {}}}}])",
                orders),
            out(R"([{"_id": "a", "total": 3.5, "n": 3}, {"_id": "b", "total": 5, "n": 1},
                    {"_id": "c", "total": 0, "n": 1}])"));
  EXPECT_EQ(run(R"([{"$group": {"_id": {"c": "$cust"}, "ids": {"$push": "$_id"},
                                "first": {"$first": "$qty"}, "last": {"$last": "$qty"},
                                "min": {"$min": "$qty"}, "max": {"$max": "$qty"},
                                "avg": {"$avg": "$qty"}}},
                    {"$match": {"_id.c": "a"}}])",
                orders),
            out(R"([{"_id": {"c": "a"}, "ids": [1, 3, 5], "first": 2, "last": null, "min": 1.5,
                     "max": 2, "avg": 1.75}])"));
  EXPECT_EQ(run(R"([{"$group": {"_id": "$k", "s": {"$addToSet": "$v"}}}])",
                R"([{"k": 1, "v": 1}, {"k": 1.0, "v": 1.0}, {"k": 1, "v": 2}])"),
            out(R"([{"_id": 1, "s": [1, 2]}])"));
  // int32 sums widen to int64, then to double.
  EXPECT_EQ(run(R"([{"$group": {"_id": null, "s": {"$sum": "$v"}}}])",
                R"([{"v": 2147483647}, {"v": 1}])"),
            out(R"([{"_id": null, "s": {"$numberLong": "2147483648"}}])"));
  EXPECT_EQ(run(R"([{"$group": {"_id": null, "s": {"$sum": "$v"}}}])", "[]"), out("[]"));
}

TEST(pipeline, group_validation) {
  expect_parse_error(R"([{"$group": {"n": {"$sum": 1}}}])", 15955,
                     "a group specification must include an _id");
  expect_parse_error(R"([{"$group": {"_id": null, "n": {"$foo": 1}}}])", 15952,
                     "unknown group operator '$foo'");
  expect_parse_error(R"([{"$group": {"_id": null, "a.b": {"$sum": 1}}}])", 40235,
                     "the group aggregate field name 'a.b' cannot be used because $group's field "
                     "names cannot contain '.'");
  expect_parse_error(R"([{"$group": {"_id": null, "n": 1}}])", 40234,
                     "The field 'n' must be an accumulator object");
  expect_parse_error(R"([{"$group": {"_id": null, "n": {"$sum": 1, "$avg": 1}}}])", 40238,
                     "The field 'n' must specify one accumulator");
  expect_parse_error(R"([{"$group": 1}])", 15947,
                     "a group's fields must be specified in an object");
}

TEST(pipeline, count) {
  EXPECT_EQ(run(R"([{"$match": {"cust": "a"}}, {"$count": "n"}])", orders), out(R"([{"n": 3}])"));
  EXPECT_EQ(run(R"([{"$match": {"cust": "z"}}, {"$count": "n"}])", orders), out("[]"));
  expect_parse_error(R"([{"$count": ""}])", 40157, "the count field must be a non-empty string");
  expect_parse_error(R"([{"$count": "$n"}])", 40158, "the count field cannot be a $-prefixed path");
  expect_parse_error(R"([{"$count": "a.b"}])", 40160, "the count field cannot contain '.'");
  expect_parse_error(R"([{"$count": 1}])", 40156, "the count field must be a non-empty string");
}

TEST(pipeline, project_add_fields_unset_replace_root) {
  EXPECT_EQ(run(R"([{"$project": {"cust": 1, "q": "$qty", "_id": 0}}, {"$limit": 2}])", orders),
            out(R"([{"cust": "a", "q": 2}, {"cust": "b", "q": 5}])"));
  EXPECT_EQ(run(R"([{"$addFields": {"a.c": 1, "d": "$a.b", "e": "$$REMOVE"}}])",
                R"([{"_id": 1, "a": {"b": 2}, "e": 1}])"),
            out(R"([{"_id": 1, "a": {"b": 2, "c": 1}, "d": 2}])"));
  EXPECT_EQ(run(R"([{"$set": {"a": {"c": 1}}}])", R"([{"_id": 1, "a": {"b": 2}}])"),
            out(R"([{"_id": 1, "a": {"b": 2, "c": 1}}])"));
  EXPECT_EQ(run(R"([{"$set": {"a.c": 1}}])", R"([{"_id": 1, "a": [{"b": 2}, 3]}])"),
            out(R"([{"_id": 1, "a": [{"b": 2, "c": 1}, {"c": 1}]}])"));
  EXPECT_EQ(run(R"([{"$unset": ["a", "b.c"]}])", R"([{"_id": 1, "a": 1, "b": {"c": 1, "d": 2}}])"),
            out(R"([{"_id": 1, "b": {"d": 2}}])"));
  EXPECT_EQ(run(R"([{"$unset": "a"}])", R"([{"_id": 1, "a": 1}])"), out(R"([{"_id": 1}])"));
  EXPECT_EQ(run(R"([{"$replaceRoot": {"newRoot": "$d"}}])", R"([{"_id": 1, "d": {"x": 1}}])"),
            out(R"([{"x": 1}])"));
  EXPECT_EQ(run(R"([{"$replaceWith": {"k": "$_id"}}])", R"([{"_id": 1}])"), out(R"([{"k": 1}])"));

  auto p = parse_pipeline(array(R"([{"$replaceRoot": {"newRoot": "$d"}}])"));
  ASSERT_TRUE(p);
  auto r = run_pipeline(*p, documents(R"([{"_id": 1}])"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 40228);
  EXPECT_EQ(r.error().message,
            "'newRoot' expression must evaluate to an object, but resulting value was: MISSING. "
            "Type of resulting value: 'missing'. Input document: { _id: 1 }");

  expect_parse_error(R"([{"$project": {}}])", 51272,
                     "Invalid $project :: caused by :: projection specification must have at "
                     "least one field");
  expect_parse_error(R"([{"$project": {"a": 1, "b": 0}}])", 31254,
                     "Invalid $project :: caused by :: Cannot do exclusion on field b in "
                     "inclusion projection");
  expect_parse_error(R"([{"$project": {"a": {"$sqrt": 4}}}])", 168,
                     "Invalid $project :: caused by :: Unrecognized expression '$sqrt'");
  expect_parse_error(R"([{"$unset": []}])", 31119, nullptr);
  expect_parse_error(R"([{"$unset": [1]}])", 31120, nullptr);
  expect_parse_error(R"([{"$replaceRoot": {}}])", 40414, nullptr);
}

TEST(pipeline, unwind) {
  const char* docs =
      R"([{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": []}, {"_id": 3}, {"_id": 4, "a": 5}])";
  EXPECT_EQ(run(R"([{"$unwind": "$a"}])", docs),
            out(R"([{"_id": 1, "a": 1}, {"_id": 1, "a": 2}, {"_id": 4, "a": 5}])"));
  EXPECT_EQ(run(R"([{"$unwind": {"path": "$a", "includeArrayIndex": "i",
                                 "preserveNullAndEmptyArrays": true}}])",
                docs),
            out(R"([{"_id": 1, "a": 1, "i": {"$numberLong": "0"}},
                    {"_id": 1, "a": 2, "i": {"$numberLong": "1"}}, {"_id": 2, "a": [], "i": null},
                    {"_id": 3, "i": null}, {"_id": 4, "a": 5, "i": null}])"));
  expect_parse_error(R"([{"$unwind": "a"}])", 28818,
                     "path option to $unwind stage should be prefixed with a '$': a");
  expect_parse_error(R"([{"$unwind": {"path": "$a", "x": 1}}])", 28811,
                     "unrecognized option to $unwind stage: x");
}

TEST(pipeline, stage_validation) {
  expect_parse_error(R"([{"$foo": {}}])", 40324, "Unrecognized pipeline stage name: '$foo'");
  expect_parse_error(R"([{"$match": {}, "$sort": {"a": 1}}])", 40323,
                     "A pipeline stage specification object must contain exactly one field.");
  expect_parse_error(R"([1])", 14, "Each element of the 'pipeline' array must be an object");
  expect_parse_error(R"([{"$match": 1}])", 15959,
                     "the match filter must be an expression in an object");
  expect_parse_error(R"([{"$match": {"$foo": 1}}])", 2, nullptr);
  expect_parse_error(R"([{"$sort": {}}])", 15976, "$sort stage must have at least one sort key");
  expect_parse_error(R"([{"$sort": 1}])", 15973, "the $sort key specification must be an object");
  expect_parse_error(R"([{"$sort": {"a": 0}}])", 15975, nullptr);
  expect_parse_error(R"([{"$limit": 0}])", 15958, "the limit must be positive");
  expect_parse_error(R"([{"$limit": "x"}])", 5107201,
                     "invalid argument to $limit stage: Expected a number in: $limit: \"x\"");
  expect_parse_error(R"([{"$skip": -1}])", 5107200,
                     "invalid argument to $skip stage: Expected a positive number in: $skip: -1");
  expect_parse_error(R"([{"$skip": 1.5}])", 5107200,
                     "invalid argument to $skip stage: Expected an integer: $skip: 1.5");
  expect_parse_error(R"([{"$lookup": {}}])", 2, nullptr);
}

TEST(pipeline, streaming_stages_transform_one_document) {
  auto match = pipeline_stage::parse(
      doc(R"({"s": {"$match": {"operationType": "update"}}})").fields().front().val);
  ASSERT_TRUE(match);
  EXPECT_TRUE(match->is_streaming());
  auto kept = match->transform(doc(R"({"operationType": "update"})"));
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->has_value());
  auto dropped = match->transform(doc(R"({"operationType": "insert"})"));
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(dropped->has_value());

  auto project = pipeline_stage::parse(
      doc(R"({"s": {"$project": {"operationType": 1, "documentKey": 1}}})").fields().front().val);
  ASSERT_TRUE(project);
  auto projected = project->transform(
      doc(R"({"_id": {"_data": "00"}, "operationType": "insert", "documentKey": {"_id": 1},
              "fullDocument": {"_id": 1}})"));
  ASSERT_TRUE(projected);
  EXPECT_EQ(json(**projected), json(doc(R"({"_id": {"_data": "00"}, "operationType": "insert",
                         "documentKey": {"_id": 1}})")));

  auto group =
      pipeline_stage::parse(doc(R"({"s": {"$group": {"_id": null}}})").fields().front().val);
  ASSERT_TRUE(group);
  EXPECT_FALSE(group->is_streaming());
  EXPECT_FALSE(group->transform(doc("{}")));
}

TEST(pipeline, sample_picks_distinct_documents_at_random) {
  auto p = parse_pipeline(array(R"([{"$sample": {"size": 3}}])"));
  ASSERT_TRUE(p);
  std::string many = "[";
  for (int i = 0; i < 200; ++i)
    many += (i > 0 ? ", {\"_id\": " : "{\"_id\": ") + std::to_string(i) + "}";
  many += "]";
  std::set<std::string> firsts;
  for (int round = 0; round < 20; ++round) {
    auto out = run_pipeline(*p, documents(many.c_str()));
    ASSERT_TRUE(out);
    ASSERT_EQ(out->size(), 3u);
    std::set<std::string> ids;
    for (const auto& d : *out)
      ids.insert(json(d));
    EXPECT_EQ(ids.size(), 3u);  // no document twice
    firsts.insert(json(out->front()));
  }
  // 20 rounds of 200 documents: the same first pick every time would not be random.
  EXPECT_GT(firsts.size(), 1u);
  // A size past the input gives every document; 0 gives none.
  EXPECT_EQ(run(R"([{"$sample": {"size": 10}}, {"$sort": {"_id": 1}}])", orders),
            run(R"([{"$sort": {"_id": 1}}])", orders));
  EXPECT_EQ(run(R"([{"$sample": {"size": 0}}])", orders), out("[]"));
  EXPECT_EQ(run(R"([{"$sample": {"size": 2.9}}, {"$count": "n"}])", orders), out(R"([{"n": 2}])"));
}

TEST(pipeline, sample_validation) {
  expect_parse_error(R"([{"$sample": 3}])", 28745,
                     "the $sample stage specification must be an object");
  expect_parse_error(R"([{"$sample": {"size": "3"}}])", 28746,
                     "size argument to $sample must be a number");
  expect_parse_error(R"([{"$sample": {"size": -1}}])", 28747,
                     "size argument to $sample must not be negative");
  expect_parse_error(R"([{"$sample": {"size": 1, "seed": 2}}])", 28748,
                     "unrecognized option to $sample: seed");
  expect_parse_error(R"([{"$sample": {}}])", 28749, "$sample stage must specify a size");
}

}  // namespace
}  // namespace mongo_emulator::engine::testing

namespace mongo_emulator::engine::testing {
namespace {

const char* const lines = R"([
  {"_id": 1, "o": "a", "quantity": 2, "price": 2.5, "sku": "  ab "},
  {"_id": 2, "o": "a", "quantity": 3, "price": {"$numberDecimal": "1.10"}, "sku": "cd"},
  {"_id": 3, "o": "b", "quantity": 1, "price": 4, "sku": null}
])";

TEST(pipeline, group_accumulators_evaluate_expression_arguments) {
  EXPECT_EQ(run(R"([{"$group": {"_id": "$o",
                                "total": {"$sum": {"$multiply": ["$quantity", "$price"]}},
                                "avg": {"$avg": {"$multiply": ["$quantity", 2]}},
                                "min": {"$min": {"$toUpper": {"$trim": {"input": "$sku"}}}},
                                "max": {"$max": {"$mod": ["$quantity", 2]}},
                                "first": {"$first": {"$toString": "$quantity"}},
                                "last": {"$last": {"$round": ["$price", 0]}},
                                "skus": {"$push": {"$ifNull": ["$sku", "none"]}}}},
                    {"$sort": {"_id": 1}}])",
                lines),
            out(R"([{"_id": "a", "total": {"$numberDecimal": "8.30"}, "avg": 5.0, "min": "AB",
                     "max": 1, "first": "2", "last": {"$numberDecimal": "1"},
                     "skus": ["  ab ", "cd"]},
                    {"_id": "b", "total": 4, "avg": 2.0, "min": "", "max": 1, "first": "1",
                     "last": 4, "skus": ["none"]}])"));
}

TEST(pipeline, project_and_add_fields_evaluate_the_operators) {
  EXPECT_EQ(run(R"([{"$project": {"_id": 1, "t": {"$multiply": ["$quantity", "$price"]},
                                  "s": {"$toLower": "$o"}}},
                    {"$set": {"r": {"$trunc": ["$t", 0]}}}, {"$limit": 1}])",
                lines),
            out(R"([{"_id": 1, "t": 5.0, "s": "a", "r": 5.0}])"));
}

std::string documents_of(const char* spec) {
  auto d = documents_stage(doc(std::string(R"({"s": )") + spec + "}").fields()[0].val);
  if (!d) return std::to_string(d.error().code) + " " + d.error().message;
  denormd::bson::array items;
  for (auto& x : *d)
    items.emplace_back(std::move(x));
  return json(denormd::bson::document{{"out", items}});
}

TEST(pipeline, documents_stage_takes_an_array_of_documents) {
  // $literal keeps `$`-prefixed strings and `$`-keys as data.
  EXPECT_EQ(documents_of(R"({"$literal": [{"_id": 1, "a": "$x", "b": {"$gt": 1}}, {}]})"),
            out(R"([{"_id": 1, "a": "$x", "b": {"$gt": 1}}, {}])"));
  EXPECT_EQ(documents_of(R"([{"a": {"$add": [1, 2]}}])"), out(R"([{"a": 3}])"));
  EXPECT_EQ(documents_of("[]"), out("[]"));
  EXPECT_EQ(documents_of(R"({"$literal": 5})"), "5858203 an array is expected");
  EXPECT_EQ(documents_of(R"("$x")"), "5858203 an array is expected");
  EXPECT_EQ(documents_of(R"([{"a": 1}, 5])"),
            "40228 elements within the array passed to $documents must evaluate to an object, "
            "but resulting value was: 5. Type of resulting value: 'int'. Input document: "
            "{ _tempDocumentsField: 5 }");
  EXPECT_EQ(documents_of(R"([{"$divide": [1, 0]}])"), "2 can't $divide by zero");
  expect_parse_error(R"([{"$match": {}}, {"$documents": []}])", 40602,
                     "$documents is only valid as the first stage in a pipeline");
}

}  // namespace
}  // namespace mongo_emulator::engine::testing
