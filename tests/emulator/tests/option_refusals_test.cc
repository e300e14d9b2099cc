// What the emulator does not implement is refused (238 NotImplemented), never accepted and
// ignored: each case here would otherwise pass on the emulator and behave differently on
// MongoDB. Also MongoDB's storage rules for `_id` (field_name_validation.js in MongoDB 6.0).

#include <gtest/gtest.h>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

class option_refusals : public emulator_test {
 protected:
  // The code of the only write error of a write command's reply (0 when it succeeded).
  std::int32_t write_error_code(const bson::document& command) {
    const auto r = run_ok(command);
    const auto* errors = r.get("writeErrors");
    if (errors == nullptr) return 0;
    EXPECT_EQ(errors->as_array().size(), 1U);
    return at(errors->as_array()[0].as_document(), "code").as<std::int32_t>();
  }
  std::size_t count(std::string_view coll, std::string_view filter = "{}") {
    bson::document cmd;
    cmd.append("count", std::string(coll));
    cmd.append("query", J(filter));
    return static_cast<std::size_t>(at(run_ok(cmd), "n").to_double());
  }
};

constexpr int not_implemented = 238;

TEST_F(option_refusals, a_case_insensitive_collation_is_refused_not_ignored) {
  insert("words", R"([{"_id": 1, "w": "ping"}, {"_id": 2, "w": "PING"}])");
  // On MongoDB this counts 2 ('ping' equals 'PING' at strength 2); ignoring the collation
  // would count 1.
  const auto r = run_fail(J(R"({"count": "words", "query": {"w": "ping"},
                                "collation": {"locale": "en", "strength": 2}})"),
                          not_implemented);
  EXPECT_EQ(at(r, "codeName"), bson::value("NotImplemented"));
  const auto& msg = at(r, "errmsg").as_string();
  EXPECT_NE(msg.find("count.collation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"en\""), std::string::npos) << msg;
  for (
      const char* cmd : {
          R"({"find": "words", "filter": {"w": "ping"}, "collation": {"locale": "en", "strength": 2}})",
          R"({"aggregate": "words", "pipeline": [], "cursor": {}, "collation": {"locale": "fr"}})",
          R"({"distinct": "words", "key": "w", "collation": {"locale": "en", "strength": 1}})",
          R"({"findAndModify": "words", "query": {"w": "ping"}, "update": {"$set": {"x": 1}},
               "collation": {"locale": "en", "strength": 2}})",
          R"({"create": "c2", "collation": {"locale": "en"}})",
          R"({"createIndexes": "words", "indexes": [{"key": {"w": 1}, "name": "w_ci",
               "collation": {"locale": "en", "strength": 2}}]})",
          R"({"update": "words", "updates": [{"q": {"w": "ping"}, "u": {"$set": {"x": 1}},
               "collation": {"locale": "en", "strength": 2}}]})",
          R"({"delete": "words", "deletes": [{"q": {"w": "ping"}, "limit": 0,
               "collation": {"locale": "en", "strength": 2}}]})",
      }) {
    run_fail(J(cmd), not_implemented);
  }
  // Nothing was written by the refused commands.
  EXPECT_EQ(count("words"), 2U);
  EXPECT_EQ(count("words", R"({"x": 1})"), 0U);
  run_fail(J(R"({"find": "words", "collation": "en"})"), 14);
  // The simple collation is what the emulator implements: accepted everywhere.
  EXPECT_EQ(at(run_ok(J(R"({"count": "words", "query": {"w": "ping"},
                            "collation": {"locale": "simple"}})")),
               "n"),
            bson::value(std::int32_t{1}));
  run_ok(J(R"({"update": "words", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}},
               "collation": {"locale": "simple"}}]})"));
  EXPECT_EQ(count("words", R"({"x": 2})"), 1U);
}

TEST_F(option_refusals, views_validators_and_other_collection_types_are_refused) {
  insert("src", R"([{"_id": 1}])");
  for (const char* cmd : {
           R"({"create": "v", "viewOn": "src", "pipeline": []})",
           R"({"create": "val", "validator": {"qty": {"$gt": 0}}})",
           R"({"create": "val", "validator": {"$jsonSchema": {"required": ["qty"]}}})",
           R"({"create": "ts", "timeseries": {"timeField": "t"}})",
           R"({"create": "cl", "clusteredIndex": {"key": {"_id": 1}, "unique": true}})",
           R"({"collMod": "src", "validator": {"qty": {"$gt": 0}}})",
           R"({"createIndexes": "src", "indexes": [{"key": {"t": 1}, "name": "t_ttl",
               "expireAfterSeconds": 60}]})",
       }) {
    const auto r = run_fail(J(cmd), not_implemented);
    EXPECT_NE(at(r, "errmsg").as_string().find("refused rather than ignored"), std::string::npos)
        << cmd;
  }
  // None of them created anything: `v` would otherwise be an empty plain collection.
  auto r = run_ok(J(R"({"listCollections": 1})"));
  std::vector<std::string> names;
  for (const auto& c : batch(r))
    names.push_back(at(c.as_document(), "name").as_string());
  EXPECT_EQ(names, std::vector<std::string>{"src"});
  r = run_ok(J(R"({"listIndexes": "src"})"));
  EXPECT_EQ(batch(r).size(), 1U);
  // The empty validator (no validation) is what the emulator implements.
  run_ok(J(R"({"create": "plain", "validator": {}})"));
  run_ok(J(R"({"collMod": "plain", "validator": {}})"));
}

TEST_F(option_refusals, id_may_not_have_dollar_prefixed_fields) {
  // Insert: 52 DollarPrefixedFieldName, whatever the operator-looking shape.
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": {"$ne": null}}]})")), 52);
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": {"a": 1, "$b": 1}}]})")),
            52);
  const auto r = run_ok(J(R"({"insert": "c", "documents": [{"_id": {"$gt": -1}}]})"));
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "errmsg"),
            bson::value("_id fields may not contain '$'-prefixed fields: $gt is not valid for "
                        "storage."));
  // Arrays, regexes and undefined stay 53.
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": [9]}]})")), 53);
  // Allowed: dotted names in _id, `$` names elsewhere, and a top-level `_id.$gt` name.
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": {"a.b": 1}}]})")), 0);
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": 1, "a": {"$b": 1}}]})")),
            0);
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": 2, "$valid": 1}]})")), 0);
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id": {"x": {"$c": 1}}}]})")),
            0);  // 6.0 checks _id's own fields only
  EXPECT_EQ(write_error_code(J(R"({"insert": "c", "documents": [{"_id.$gt": 4}]})")), 0);
  // Upserts that would store such an _id.
  for (const char* u : {
           R"({"q": {"a.b": 1}, "u": {"_id": {"$invalid": 1}}, "upsert": true})",
           R"({"q": {"a.b": 1}, "u": {"$set": {"_id": {"$invalid": 1}}}, "upsert": true})",
           R"({"q": {"a.b": 1}, "u": {"$set": {"_id.$gt": 1}}, "upsert": true})",
           R"({"q": {"a.b": 1}, "u": {"$setOnInsert": {"_id": {"$invalid": 1}}}, "upsert": true})",
           R"({"q": {"_id.$gt": 1}, "u": {"$set": {"a": 1}}, "upsert": true})",
       }) {
    bson::document cmd;
    cmd.append("update", "up");
    cmd.append("updates", bson::array{bson::value(J(u))});
    EXPECT_EQ(write_error_code(cmd), 52) << u;
  }
  EXPECT_EQ(count("up"), 0U);
  // A pipeline upsert may store top-level `$` names (only replacements may not).
  bson::document cmd;
  cmd.append("update", "up");
  cmd.append("updates", bson::array{bson::value(J(R"({"q": {"a.b": 4},
      "u": [{"$replaceWith": {"$literal": {"$ref": 1}}}], "upsert": true})"))});
  EXPECT_EQ(write_error_code(cmd), 0);
  EXPECT_EQ(count("up"), 1U);
}

}  // namespace
}  // namespace mongo_emulator::test
