// $expr and `let` through the wire, in every command that takes a filter, and after
// $changeStream: results and errors as MongoDB 6.0 documents them.

#include <gtest/gtest.h>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

using ids_t = std::vector<std::int32_t>;

class expr : public emulator_test {
 protected:
  void SetUp() override {
    emulator_test::SetUp();
    // The documentation's monthlyBudget example.
    insert("budgets", R"([{"_id": 1, "category": "food", "budget": 400, "spent": 450},
                          {"_id": 2, "category": "drinks", "budget": 100, "spent": 150},
                          {"_id": 3, "category": "clothes", "budget": 100, "spent": 50},
                          {"_id": 4, "category": "misc", "budget": 500, "spent": 300},
                          {"_id": 5, "category": "travel", "budget": 200, "spent": 650}])");
  }
  static ids_t ids(const bson::document& reply) {
    ids_t out;
    for (const auto& d : batch(reply))
      out.push_back(at(d.as_document(), "_id").as<std::int32_t>());
    return out;
  }
  ids_t ids_of(std::string_view command) { return ids(run_ok(J(command))); }
  // The code of the only write error of a write command's reply (0 when it succeeded, -1 and a
  // failure when the reply has no such error, as from a server without $expr).
  std::int32_t write_error_code(std::string_view command) {
    const auto r = run_ok(J(command));
    const auto* errors = r.get("writeErrors");
    if (errors == nullptr) return 0;
    if (!errors->is_array() || errors->as_array().empty() || !errors->as_array()[0].is_document()) {
      ADD_FAILURE() << "malformed writeErrors: " << bson::to_json(r);
      return -1;
    }
    const auto& code = at(errors->as_array()[0].as_document(), "code");
    return code.is<std::int32_t>() ? code.as<std::int32_t>() : -1;
  }
};

TEST_F(expr, find_compares_fields_of_one_document) {
  EXPECT_EQ(ids_of(R"({"find": "budgets", "filter": {"$expr": {"$gt": ["$spent", "$budget"]}},
                       "sort": {"_id": 1}})"),
            (ids_t{1, 2, 5}));
  // Beside ordinary predicates, inside $or, and reading a command's `let`.
  EXPECT_EQ(ids_of(R"({"find": "budgets", "sort": {"_id": 1}, "let": {"cap": 100},
                       "filter": {"budget": {"$lte": 200},
                                  "$or": [{"$expr": {"$gt": ["$spent", "$$cap"]}},
                                          {"category": "clothes"}]}})"),
            (ids_t{2, 3, 5}));
  // A `let` variable in the projection too.
  const auto r = run_ok(J(R"({"find": "budgets", "filter": {"_id": 1}, "let": {"tag": "x"},
                              "projection": {"_id": 0, "t": "$$tag"}})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(batch(r)[0], bson::value(J(R"({"t": "x"})")));
  // count and distinct take $expr too.
  EXPECT_EQ(
      at(run_ok(J(R"({"count": "budgets", "query": {"$expr": {"$lt": ["$spent", 100]}}})")), "n"),
      bson::value(std::int32_t{1}));
}

// Issue 33's evaluation path: raw documents sent back as data ($literal keeps `$`-strings and
// `$`-keys as they are) through {aggregate: 1, pipeline: [{$documents}, {$project}]}.
TEST_F(expr, documents_stage_evaluates_expressions_without_a_collection) {
  const auto r = run_ok(J(R"({"aggregate": 1, "cursor": {}, "pipeline": [
      {"$documents": {"$literal": [
          {"_id": 1, "q": 3, "p": 2.5, "name": " Ann ", "tag": "$x", "k": {"$gt": 1},
           "at": {"$date": {"$numberLong": "1577934245006"}}},
          {"_id": 2, "q": 2147483647, "p": 1, "name": null}]}},
      {"$project": {"_id": 1,
                    "total": {"$multiply": ["$q", "$p"]},
                    "wide": {"$add": ["$q", 1]},
                    "name": {"$toUpper": {"$trim": {"input": {"$ifNull": ["$name", ""]}}}},
                    "day": {"$dateToString": {"date": "$at", "format": "%Y-%m-%d",
                                              "onNull": "none"}},
                    "r": {"$round": [{"$divide": ["$q", 7]}, 2]},
                    "s": {"$toString": "$q"},
                    "tag": 1, "k": 1}}]})"));
  EXPECT_EQ(at(at(r, "cursor").as_document(), "ns"),
            bson::value(std::string(db()) + ".$cmd.aggregate"));
  ASSERT_EQ(batch(r).size(), 2U);
  EXPECT_EQ(batch(r)[0], bson::value(J(R"({"_id": 1, "tag": "$x", "k": {"$gt": 1}, "total": 7.5,
                                          "wide": 4, "name": "ANN", "day": "2020-01-02",
                                          "r": 0.43, "s": "3"})")));
  EXPECT_EQ(batch(r)[1], bson::value(J(R"({"_id": 2, "total": 2147483647,
                              "wide": {"$numberLong": "2147483648"}, "name": "", "day": "none",
                              "r": 306783378.14, "s": "2147483647"})")));
  // Past the first batch, the rest comes through getMore on "$cmd.aggregate".
  const auto first = run_ok(J(R"({"aggregate": 1, "cursor": {"batchSize": 1}, "pipeline": [
      {"$documents": [{"a": 1}, {"a": 2}]},
      {"$set": {"b": {"$abs": {"$subtract": [0, "$a"]}}}}]})"));
  ASSERT_EQ(batch(first).size(), 1U);
  const auto next = get_more(first);
  ASSERT_EQ(batch(next).size(), 1U);
  EXPECT_EQ(batch(next)[0], bson::value(J(R"({"a": 2, "b": 2})")));
  // One document that makes an expression fail fails the whole command, with MongoDB's error.
  const auto e = run_fail(J(R"({"aggregate": 1, "cursor": {}, "pipeline": [
      {"$documents": {"$literal": [{"_id": 1, "v": "12"}, {"_id": 2, "v": "abc"}]}},
      {"$project": {"n": {"$toInt": "$v"}}}]})"),
                          241);
  EXPECT_EQ(at(e, "codeName"), bson::value("ConversionFailure"));
  EXPECT_EQ(at(e, "errmsg"), bson::value("Failed to parse number 'abc' in $convert with no onError "
                                         "value: Did not consume whole string."));
  run_fail(J(R"({"aggregate": 1, "cursor": {}, "pipeline": [{"$documents": 5}]})"), 5858203);
  run_fail(J(R"({"aggregate": 1, "cursor": {}, "pipeline": [{"$documents": [1]}]})"), 40228);
}

TEST_F(expr, errors_have_mongodbs_codes) {
  // At parse time: an unknown operator, an undefined variable, a bad `let` name.
  auto parse_error =
      run_fail(J(R"({"find": "budgets", "filter": {"$expr": {"$frobnicate": 1}}})"), 168);
  EXPECT_EQ(at(parse_error, "codeName"), bson::value("InvalidPipelineOperator"));
  run_fail(J(R"({"find": "budgets", "filter": {"$expr": {"$eq": ["$a", "$$nope"]}}})"), 17276);
  run_fail(J(R"({"find": "budgets", "filter": {}, "let": {"Cap": 1}})"), 16867);
  // At run time: the command fails (no partial batch).
  const auto r =
      run_fail(J(R"({"find": "budgets", "filter": {"$expr": {"$size": "$budget"}}})"), 17124);
  EXPECT_EQ(at(r, "errmsg"),
            bson::value("The argument to $size must be an array. Type of argument: int"));
}

TEST_F(expr, a_projection_error_on_a_later_batch_kills_the_cursor) {
  insert("t", R"([{"_id": 1, "a": [1]}, {"_id": 2, "a": "x"}])");
  const auto first = run_ok(J(R"({"find": "t", "sort": {"_id": 1}, "batchSize": 1,
                                  "projection": {"n": {"$size": "$a"}}})"));
  ASSERT_EQ(batch(first).size(), 1U);
  EXPECT_EQ(batch(first)[0], bson::value(J(R"({"_id": 1, "n": 1})")));
  bson::document more;
  more.append("getMore", cursor_id(first));
  more.append("collection", "t");
  run_fail(more, 17124);
  run_fail(more, 43);  // the cursor is gone, as after any getMore error
}

TEST_F(expr, aggregate_match_and_stages_read_let) {
  EXPECT_EQ(ids_of(R"({"aggregate": "budgets", "cursor": {}, "let": {"min": 300},
                       "pipeline": [{"$match": {"$expr": {"$gte": ["$budget", "$$min"]}}},
                                    {"$sort": {"_id": 1}}]})"),
            (ids_t{1, 4}));
  const auto r = run_ok(J(R"({"aggregate": "budgets", "cursor": {}, "let": {"unit": "EUR"},
      "pipeline": [{"$match": {"_id": 2}},
                   {"$project": {"over": {"$cond": [{"$gt": ["$spent", "$budget"]}, "yes", "no"]},
                                 "label": {"$concat": ["$category", " in ", "$$unit"]}}}]})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(batch(r)[0], bson::value(J(R"({"_id": 2, "over": "yes", "label": "drinks in EUR"})")));
}

TEST_F(expr, writes_filter_with_expr_and_let) {
  // update: each statement's filter; a run-time error fails only its statement.
  auto r = run_ok(J(R"({"update": "budgets", "let": {"factor": "over"},
      "updates": [{"q": {"$expr": {"$gt": ["$spent", "$budget"]}},
                   "u": {"$set": {"flag": "over"}}, "multi": true},
                  {"q": {"$expr": {"$size": "$budget"}}, "u": {"$set": {"never": 1}}}],
      "ordered": false})"));
  EXPECT_EQ(at(r, "nModified"), bson::value(std::int32_t{3}));
  ASSERT_TRUE(at(r, "writeErrors").is_array());
  ASSERT_EQ(at(r, "writeErrors").as_array().size(), 1U);
  ASSERT_TRUE(at(r, "writeErrors").as_array()[0].is_document());
  const auto& e = at(r, "writeErrors").as_array()[0].as_document();
  EXPECT_EQ(at(e, "index"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(e, "code"), bson::value(std::int32_t{17124}));
  EXPECT_EQ(ids_of(R"({"find": "budgets", "filter": {"flag": "over"}, "sort": {"_id": 1}})"),
            (ids_t{1, 2, 5}));
  // A pipeline update reading `let`.
  EXPECT_EQ(write_error_code(R"({"update": "budgets", "let": {"note": "checked"},
      "updates": [{"q": {"_id": 3}, "u": [{"$set": {"note": "$$note"}}]}]})"),
            0);
  EXPECT_EQ(ids_of(R"({"find": "budgets", "filter": {"note": "checked"}})"), (ids_t{3}));
  // findAndModify with `let`.
  r = run_ok(J(R"({"findAndModify": "budgets", "let": {"target": "misc"},
                   "query": {"$expr": {"$eq": ["$category", "$$target"]}},
                   "update": {"$inc": {"budget": 1}}, "new": true})"));
  EXPECT_EQ(at(r, "value.budget"), bson::value(std::int32_t{501}));
  // delete.
  r = run_ok(J(R"({"delete": "budgets", "let": {"cut": 200},
                   "deletes": [{"q": {"$expr": {"$lt": ["$budget", "$$cut"]}}, "limit": 0}]})"));
  EXPECT_EQ(at(r, "n"), bson::value(std::int32_t{2}));
}

TEST_F(expr, a_change_stream_keeps_only_updates_that_touch_a_path) {
  // The server-side filter a watcher uses: an update passes when one of its updated or
  // removed fields is `name`, under it, or above it.
  const char* touches_name = R"({"$match": {"$or": [
      {"operationType": {"$ne": "update"}},
      {"$expr": {"$anyElementTrue": [{"$map": {
          "input": {"$concatArrays": [
              {"$map": {"input": {"$objectToArray": "$updateDescription.updatedFields"},
                        "in": "$$this.k"}},
              "$updateDescription.removedFields"]},
          "as": "p",
          "in": {"$or": [{"$eq": ["$$p", "$$watched"]},
                         {"$eq": [{"$indexOfCP": ["$$p", {"$concat": ["$$watched", "."]}]}, 0]},
                         {"$eq": [{"$indexOfCP": ["$$watched", {"$concat": ["$$p", "."]}]},
                                  0]}]}}}]}}]}})";
  bson::document cmd;
  cmd.append("aggregate", "people");
  cmd.append("pipeline",
             bson::array{bson::value(J(R"({"$changeStream": {}})")), bson::value(J(touches_name))});
  cmd.append("cursor", bson::document{});
  cmd.append("let", J(R"({"watched": "name.first"})"));
  auto cursor = run_ok(cmd);
  ASSERT_TRUE(at(cursor, "cursor.ns").is_string()) << bson::to_json(cursor);
  insert("people", R"([{"_id": 1, "name": {"first": "A", "last": "B"}, "age": 1}])");
  const auto upd = [&](const char* u) {
    bson::document c;
    c.append("update", "people");
    c.append("updates",
             bson::array{bson::value(bson::document{{"q", J(R"({"_id": 1})")}, {"u", J(u)}})});
    run_ok(c);
  };
  upd(R"({"$set": {"age": 2}})");                // dropped
  upd(R"({"$set": {"name.last": "C"}})");        // dropped: a sibling
  upd(R"({"$set": {"name.first": "D"}})");       // kept: the path
  upd(R"({"$set": {"name": {"first": "E"}}})");  // kept: above it
  upd(R"({"$unset": {"name.first": ""}})");      // kept: removed
  upd(R"({"$set": {"name.first": {"x": 1}}})");  // kept (set again)
  upd(R"({"$set": {"name.first.x": 2}})");       // kept: under it
  upd(R"({"$set": {"names": 1}})");              // dropped: a prefix of the name only
  insert("people", R"([{"_id": 2}])");           // a sentinel: inserts pass
  // What each event changed: "insert", or the updated and removed field names.
  std::vector<std::string> seen;
  for (int round = 0; round < 50 && (seen.empty() || seen.back() != "insert" || seen.size() < 2);
       ++round) {
    const auto next = get_more(cursor, 200);
    for (const auto& e : batch(next)) {
      ASSERT_TRUE(e.is_document());
      const auto& ev = e.as_document();
      ASSERT_TRUE(at(ev, "operationType").is_string()) << bson::to_json(ev);
      std::string what = at(ev, "operationType").as_string();
      if (what == "update") {
        what.clear();
        ASSERT_TRUE(at(ev, "updateDescription.updatedFields").is_document());
        ASSERT_TRUE(at(ev, "updateDescription.removedFields").is_array());
        for (const auto& f : at(ev, "updateDescription.updatedFields").as_document())
          what += f.name + " ";
        for (const auto& r : at(ev, "updateDescription.removedFields").as_array())
          what += "-" + r.as_string() + " ";
      }
      seen.push_back(what);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"insert", "name.first ", "name ", "-name.first ",
                                            "name.first ", "name.first.x ", "insert"}));
}

TEST_F(expr, a_run_time_error_after_change_stream_ends_the_stream) {
  auto cursor = open_stream("c", "{}", R"([{"$match": {"$expr": {"$size": "$fullDocument.a"}}}])");
  insert("c", R"([{"_id": 1, "a": [1]}, {"_id": 2, "a": "not an array"}])");
  bson::document cmd;
  cmd.append("getMore", cursor_id(cursor));
  cmd.append("collection", "c");
  cmd.append("maxTimeMS", std::int32_t{200});
  run_fail(cmd, 17124);
  // The cursor is gone, as after any error on a change stream.
  run_fail(cmd, 43);
}

}  // namespace
}  // namespace mongo_emulator::test
