// What the emulator does not implement is refused (238 NotImplemented), never accepted and
// ignored: each case here would otherwise pass on the emulator and behave differently on
// MongoDB. Also MongoDB's storage rules for `_id` (field_name_validation.js in MongoDB 6.0),
// the unknown fields MongoDB's IDL parsers refuse (40415), and what is implemented instead of
// refused: collMod's index `hidden`, validationLevel/validationAction, regexes in filters.

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
    if (!errors->is_array() || errors->as_array().size() != 1U ||
        !errors->as_array()[0].is_document()) {
      ADD_FAILURE() << "not one write error: " << bson::to_json(r);
      return -1;
    }
    const auto& code = at(errors->as_array()[0].as_document(), "code");
    return code.is<std::int32_t>() ? code.as<std::int32_t>() : -1;
  }
  std::size_t count(std::string_view coll, std::string_view filter = "{}") {
    return count(coll, J(filter));
  }
  std::size_t count(std::string_view coll, const bson::document& filter) {
    bson::document cmd;
    cmd.append("count", std::string(coll));
    cmd.append("query", filter);
    return static_cast<std::size_t>(at(run_ok(cmd), "n").to_double());
  }
  // The command with a session's fields, as a driver sends a transaction's statement.
  static bson::document in_session(bson::document cmd, std::int64_t txn) {
    cmd.append("lsid", bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 9)}}});
    cmd.append("txnNumber", txn);
    return cmd;
  }
  std::vector<std::string> collection_names() {
    std::vector<std::string> names;
    const auto r = run_ok(J(R"({"listCollections": 1})"));
    for (const auto& c : batch(r))
      names.push_back(at(c.as_document(), "name").as_string());
    return names;
  }
  bson::document collection_options(std::string_view name) {
    bson::document cmd{{"listCollections", std::int32_t{1}}};
    cmd.append("filter", bson::document{{"name", std::string(name)}});
    const auto r = run_ok(cmd);
    if (batch(r).size() != 1U || !batch(r)[0].is_document()) {
      ADD_FAILURE() << "no collection " << name << ": " << bson::to_json(r);
      return {};
    }
    const auto& options = at(batch(r)[0].as_document(), "options");
    return options.is_document() ? options.as_document() : bson::document{};
  }
  // The spec listIndexes gives for `name` (empty when there is none).
  bson::document index_named(std::string_view coll, std::string_view name) {
    bson::document cmd;
    cmd.append("listIndexes", std::string(coll));
    const auto r = run_ok(cmd);
    for (const auto& spec : batch(r)) {
      if (spec.is_document() && at(spec.as_document(), "name") == bson::value(std::string(name)))
        return spec.as_document();
    }
    return {};
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

// Transactions are implemented (pymongo_transactions.py tests them); what is not inside one is
// refused: create and createIndexes (238), which MongoDB 4.4+ allows.
TEST_F(option_refusals, transaction_session_checks_and_refusals) {
  for (const char* cmd :
       {R"({"create": "t"})",
        R"({"createIndexes": "t", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"}) {
    auto start = in_session(J(cmd), 1);
    start.append("startTransaction", true);
    start.append("autocommit", false);
    const auto r = run_fail(start, not_implemented);
    EXPECT_EQ(at(r, "codeName"), bson::value("NotImplemented"));
  }
  for (const char* name : {"commitTransaction", "abortTransaction"})
    run_fail(bson::document{{name, std::int32_t{1}}}, 13);  // admin only, as on MongoDB
  EXPECT_TRUE(collection_names().empty());
  // The session checks MongoDB makes before any transaction: 72 InvalidOptions.
  auto bad = in_session(J(R"({"insert": "t", "documents": [{"_id": 2}]})"), 2);
  bad.append("autocommit", true);
  run_fail(bad, 72);
  auto no_txn = J(R"({"insert": "t", "documents": [{"_id": 2}], "autocommit": false})");
  run_fail(no_txn, 72);
  auto no_autocommit = in_session(J(R"({"insert": "t", "documents": [{"_id": 2}]})"), 3);
  no_autocommit.append("startTransaction", true);
  run_fail(no_autocommit, 72);
  auto start_false = in_session(J(R"({"insert": "t", "documents": [{"_id": 2}]})"), 3);
  start_false.append("startTransaction", false);
  start_false.append("autocommit", false);
  run_fail(start_false, 72);
  EXPECT_EQ(count("t"), 0U);
  // A retryable write (txnNumber without autocommit) is not a transaction.
  run_ok(in_session(J(R"({"insert": "t", "documents": [{"_id": 3}]})"), 4));
  EXPECT_EQ(count("t"), 1U);
}

TEST_F(option_refusals, capped_collections_and_tailable_cursors_are_refused) {
  insert("plain", R"([{"_id": 1}, {"_id": 2}])");
  for (const char* cmd : {
           R"({"create": "capped", "capped": true, "size": 4096})",
           R"({"create": "capped", "capped": 1, "size": 4096, "max": 10})",
           R"({"collMod": "plain", "cappedSize": 8192})",
           R"({"collMod": "plain", "cappedMax": 5})",
           R"({"find": "plain", "tailable": true})",
           R"({"find": "plain", "tailable": true, "awaitData": true})",
           R"({"find": "plain", "awaitData": true})",
       }) {
    const auto r = run_fail(J(cmd), not_implemented);
    EXPECT_NE(at(r, "errmsg").as_string().find("refused rather than ignored"), std::string::npos)
        << cmd;
  }
  EXPECT_EQ(collection_names(), std::vector<std::string>{"plain"});
  // Their defaults are what the emulator does.
  run_ok(J(R"({"create": "uncapped", "capped": false})"));
  EXPECT_EQ(batch(run_ok(J(R"({"find": "plain", "tailable": false, "awaitData": false})"))).size(),
            2U);
}

TEST_F(option_refusals, unknown_fields_of_strictly_parsed_commands_are_40415) {
  insert("c", R"([{"_id": 1, "a": 1}])");
  run_ok(J(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"));
  const struct {
    const char* command;
    const char* field;
  } cases[] = {
      {R"({"create": "n", "frobnicate": 1})", "create.frobnicate"},
      {R"({"create": "n", "validationlevel": "off"})", "create.validationlevel"},
      {R"({"collMod": "c", "frobnicate": 1})", "collMod.frobnicate"},
      {R"({"collMod": "c", "index": {"name": "a_1", "hidden": true, "sparse": true}})",
       "collMod.index.sparse"},
      {R"({"find": "c", "frobnicate": 1})", "find.frobnicate"},
      {R"({"find": "c", "filter": {}, "projections": {"a": 1}})", "find.projections"},
  };
  for (const auto& c : cases) {
    const auto r = run_fail(J(c.command), 40415);
    EXPECT_EQ(at(r, "codeName"), bson::value("IDLUnknownField"));
    EXPECT_EQ(at(r, "errmsg"),
              bson::value("BSON field '" + std::string(c.field) + "' is an unknown field."));
  }
  EXPECT_EQ(collection_names(), std::vector<std::string>{"c"});
  EXPECT_FALSE(index_named("c", "a_1").contains("hidden"));
  // Arguments every command takes are not unknown.
  run_ok(J(R"({"create": "n", "comment": "x", "writeConcern": {"w": 1}, "maxTimeMS": 100})"));
  run_ok(J(R"({"collMod": "n", "comment": "x", "writeConcern": {"w": "majority"}})"));
  run_ok(J(R"({"find": "c", "comment": "x", "maxTimeMS": 100, "readConcern": {"level": "local"},
               "allowDiskUse": true, "allowPartialResults": false, "noCursorTimeout": true})"));
  // Known options the emulator does not have: refused, by name.
  for (const char* cmd : {
           R"({"create": "m", "storageEngine": {"wiredTiger": {}}})",
           R"({"create": "m", "idIndex": {"key": {"_id": 1}, "name": "_id_"}})",
           R"({"create": "m", "autoIndexId": false})",
           R"({"create": "m", "indexOptionDefaults": {}})",
           R"({"create": "m", "recordPreImages": true})",
           R"({"collMod": "c", "recordPreImages": true})",
           R"({"collMod": "c", "index": {"name": "a_1", "unique": true}})",
           R"({"collMod": "c", "index": {"name": "a_1", "prepareUnique": true}})",
           R"({"collMod": "c", "index": {"name": "a_1", "expireAfterSeconds": 10}})",
           R"({"find": "c", "returnKey": true})",
           R"({"find": "c", "showRecordId": true})",
           R"({"find": "c", "min": {"a": 0}, "hint": {"a": 1}})",
           R"({"find": "c", "max": {"a": 9}, "hint": {"a": 1}})",
           R"({"find": "c", "ntoreturn": 1})",
       }) {
    const auto r = run_fail(J(cmd), not_implemented);
    EXPECT_NE(at(r, "errmsg").as_string().find("refused rather than ignored"), std::string::npos)
        << cmd;
  }
  EXPECT_EQ(collection_names(), (std::vector<std::string>{"c", "n"}));
}

// Without a validator (the only one the emulator has is empty) validationLevel and
// validationAction change nothing on MongoDB either; they are kept and shown, and checked.
TEST_F(option_refusals, validation_level_and_action_are_kept_and_checked) {
  run_ok(J(R"({"create": "v", "validationLevel": "moderate", "validationAction": "warn"})"));
  EXPECT_EQ(collection_options("v"),
            J(R"({"validationLevel": "moderate", "validationAction": "warn"})"));
  run_ok(J(R"({"collMod": "v", "validationLevel": "off"})"));
  EXPECT_EQ(collection_options("v"),
            J(R"({"validationLevel": "off", "validationAction": "warn"})"));
  auto r = run_fail(J(R"({"collMod": "v", "validationAction": "shout"})"), 2);
  EXPECT_EQ(at(r, "errmsg"), bson::value("Enumeration value 'shout' for field "
                                         "'collMod.validationAction' is not a valid value."));
  run_fail(J(R"({"create": "w", "validationLevel": "sometimes"})"), 2);
  run_fail(J(R"({"create": "w", "validationLevel": 1})"), 14);
  EXPECT_EQ(collection_names(), std::vector<std::string>{"v"});
  // The options MongoDB does not keep are not shown.
  run_ok(J(R"({"create": "x", "validator": {}, "capped": false})"));
  EXPECT_EQ(collection_options("x"), bson::document{});
}

// collMod's index `hidden` as MongoDB implements it (coll_mod.cpp): the spec changes, the reply
// says so, the index is still maintained (a hidden unique index still refuses duplicates).
TEST_F(option_refusals, coll_mod_hides_and_unhides_an_index) {
  insert("h", R"([{"_id": 1, "a": 1, "u": 1}, {"_id": 2, "a": 2, "u": 2}])");
  run_ok(J(R"({"createIndexes": "h", "indexes": [{"key": {"a": 1}, "name": "a_1"},
                                                 {"key": {"u": 1}, "name": "u_1", "unique": true}]})"));
  auto r = run_ok(J(R"({"collMod": "h", "index": {"name": "a_1", "hidden": true}})"));
  EXPECT_EQ(at(r, "hidden_old"), bson::value(false));
  EXPECT_EQ(at(r, "hidden_new"), bson::value(true));
  EXPECT_EQ(index_named("h", "a_1"),
            J(R"({"v": 2, "key": {"a": 1}, "name": "a_1", "hidden": true})"));
  // Hiding a hidden index changes nothing, and the reply says nothing about it.
  r = run_ok(J(R"({"collMod": "h", "index": {"keyPattern": {"a": 1}, "hidden": true}})"));
  EXPECT_FALSE(r.contains("hidden_old"));
  // Queries give the same results; only the planner skips a hidden index.
  EXPECT_EQ(count("h", R"({"a": 2})"), 1U);
  run_ok(J(R"({"collMod": "h", "index": {"name": "u_1", "hidden": 1}})"));
  r = run_ok(J(R"({"insert": "h", "documents": [{"_id": 3, "u": 1}]})"));
  EXPECT_EQ(at(r, "writeErrors.0.code"), bson::value(std::int32_t{11000}));
  r = run_ok(J(R"({"collMod": "h", "index": {"keyPattern": {"a": 1}, "hidden": false}})"));
  EXPECT_EQ(at(r, "hidden_old"), bson::value(true));
  EXPECT_EQ(at(r, "hidden_new"), bson::value(false));
  EXPECT_EQ(index_named("h", "a_1"), J(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})"));
  // MongoDB's errors, in its order.
  r = run_fail(J(R"({"collMod": "h", "index": {"name": "_id_", "hidden": true}})"), 2);
  EXPECT_EQ(at(r, "errmsg"), bson::value("can't hide _id index"));
  r = run_fail(J(R"({"collMod": "h", "index": {"name": "nope", "hidden": true}})"), 27);
  EXPECT_EQ(at(r, "errmsg"), bson::value("cannot find index nope for ns " + db() + ".h"));
  r = run_fail(J(R"({"collMod": "h", "index": {"hidden": true}})"), 72);
  EXPECT_EQ(at(r, "errmsg"), bson::value("Must specify either index name or key pattern."));
  r = run_fail(J(R"({"collMod": "h", "index": {"name": "a_1", "keyPattern": {"a": 1},
                                               "hidden": true}})"),
               72);
  EXPECT_EQ(at(r, "errmsg"), bson::value("Cannot specify both key pattern and name."));
  r = run_fail(J(R"({"collMod": "h", "index": {"name": "a_1"}})"), 72);
  EXPECT_EQ(at(r, "errmsg"), bson::value("no expireAfterSeconds, hidden, unique, or "
                                         "prepareUnique field"));
  EXPECT_FALSE(index_named("h", "_id_").contains("hidden"));
}

// A regex in a filter matches (it used to match nothing), in every command that filters; the
// query operators the emulator lacks are refused.
TEST_F(option_refusals, regexes_in_filters_match_and_missing_operators_are_refused) {
  insert("r", R"([{"_id": 1, "s": "apple"}, {"_id": 2, "s": "Avocado"}, {"_id": 3, "s": "pear"},
                  {"_id": 4, "s": ["kiwi", "apricot"]}, {"_id": 5, "s": 5}])");
  const bson::document starts_with_a{{"s", bson::regex{"^a", ""}}};
  const bson::document starts_with_a_any_case{{"s", bson::regex{"^a", "i"}}};
  EXPECT_EQ(count("r", starts_with_a), 2U);
  EXPECT_EQ(count("r", starts_with_a_any_case), 3U);
  bson::document ops;  // {$regex: "^A", $options: "i"}, which JSON would read as a literal
  ops.append("$regex", "^A");
  ops.append("$options", "i");
  EXPECT_EQ(count("r", bson::document{{"s", ops}}), 3U);
  bson::document find{{"find", "r"}};
  find.append("filter", starts_with_a);
  find.append("sort", J(R"({"_id": 1})"));
  const auto found = run_ok(find);
  ASSERT_EQ(batch(found).size(), 2U);
  EXPECT_EQ(at(batch(found)[1].as_document(), "_id"), bson::value(std::int32_t{4}));
  // Writes filter with it too; an upsert takes nothing from it.
  bson::document update{{"update", "r"}};
  update.append("updates", bson::array{bson::document{{"q", starts_with_a_any_case},
                                                      {"u", J(R"({"$set": {"a": true}})")},
                                                      {"multi", true}}});
  EXPECT_EQ(at(run_ok(update), "nModified"), bson::value(std::int32_t{3}));
  bson::document upsert{{"update", "r"}};
  upsert.append("updates",
                bson::array{bson::document{{"q", bson::document{{"s", bson::regex{"^z", ""}}}},
                                           {"u", J(R"({"$set": {"_id": 9}})")},
                                           {"upsert", true}}});
  run_ok(upsert);
  EXPECT_EQ(count("r", R"({"_id": 9, "s": {"$exists": false}})"), 1U);
  bson::document del{{"delete", "r"}};
  del.append("deletes",
             bson::array{bson::document{{"q", bson::document{{"s", bson::regex{"pear|kiwi", ""}}}},
                                        {"limit", std::int32_t{0}}}});
  EXPECT_EQ(at(run_ok(del), "n"), bson::value(std::int32_t{2}));
  // MongoDB's regex errors, and operators the emulator does not implement.
  bson::document bad_flag{{"find", "r"}};  // libbson drops unknown flags from a regex value
  bad_flag.append("filter",
                  bson::document{{"s", bson::document{{"$regex", "x"}, {"$options", "g"}}}});
  run_fail(bad_flag, 51108);
  for (const char* filter :
       {R"({"s": {"$mod": [2, 1]}})", R"({"$where": "true"})", R"({"$text": {"$search": "apple"}})",
        R"({"$jsonSchema": {"required": ["s"]}})"}) {
    bson::document cmd{{"find", "r"}};
    cmd.append("filter", J(filter));
    const auto r = run_fail(cmd, not_implemented);
    EXPECT_NE(at(r, "errmsg").as_string().find("query operator"), std::string::npos) << filter;
  }
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
