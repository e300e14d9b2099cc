// Each command through libmongoc: replies, counts as int32, errors with codes and messages.

#include <gtest/gtest.h>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

class commands : public emulator_test {
 protected:
  std::vector<bson::document> find_all(std::string_view coll, std::string_view filter = "{}",
                                       std::string_view opts = "{}") {
    bson::document cmd;
    cmd.append("find", std::string(coll));
    cmd.append("filter", J(filter));
    for (auto& f : J(opts))
      cmd.append(f.name, f.val);
    auto r = run_ok(cmd);
    std::vector<bson::document> out;
    for (const auto& d : batch(r))
      out.push_back(d.as_document());
    return out;
  }
};

const bson::value i32(std::int32_t v) {
  return bson::value(v);
}

TEST_F(commands, ping_and_build_info) {
  EXPECT_EQ(at(run_ok(J(R"({"ping": 1})"), "admin"), "ok"), bson::value(1.0));
  const auto info = run_ok(J(R"({"buildInfo": 1})"), "admin");
  ASSERT_TRUE(at(info, "version").is_string());
  EXPECT_TRUE(at(info, "version").as_string().starts_with("6.0."));
  EXPECT_TRUE(at(info, "versionArray").is_array());
}

TEST_F(commands, unknown_command_is_59_command_not_found) {
  const auto r = run_fail(J(R"({"frobnicate": 1})"), 59);
  EXPECT_EQ(at(r, "errmsg"), bson::value("no such command: 'frobnicate'"));
  EXPECT_EQ(at(r, "codeName"), bson::value("CommandNotFound"));
  EXPECT_EQ(at(r, "ok"), bson::value(0.0));
  EXPECT_TRUE(at(r, "code").is<std::int32_t>());
  EXPECT_TRUE(at(r, "operationTime").is<bson::timestamp>());
  EXPECT_TRUE(at(r, "$clusterTime.clusterTime").is<bson::timestamp>());
}

TEST_F(commands, sessions_and_server_status) {
  run_ok(J(R"({"endSessions": []})"), "admin");
  run_ok(J(R"({"killAllSessions": []})"), "admin");
  const auto s = run_ok(J(R"({"serverStatus": 1})"), "admin");
  EXPECT_TRUE(at(s, "connections.current").is<std::int32_t>());
}

TEST_F(commands, server_status_counts_commands_like_mongodb) {
  const auto count = [&](const char* field) -> std::int64_t {
    const auto s = run_ok(J(R"({"serverStatus": 1})"), "admin");
    const auto* v = s.get("metrics")->as_document().get("commands");
    const auto* c = v->as_document().get("update");
    if (c == nullptr) return 0;
    return c->as_document().get(field)->as<std::int64_t>();
  };
  const std::int64_t total = count("total"), failed = count("failed");
  run_ok(J(R"({"update": "counted", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]})"));
  run_ok(J(R"({"update": "counted", "updates": [{"q": {}, "u": {"$set": {"a": 2}}, "multi": true},
                                                {"q": {}, "u": {"$set": {"a": 3}}}]})"));
  run_fail(J(R"({"update": "counted"})"), 40414);
  EXPECT_EQ(count("total"), total + 3);  // commands, not statements
  EXPECT_EQ(count("failed"), failed + 1);
}

TEST_F(commands, server_status_counts_documents_written_like_mongodb) {
  const auto count = [&](const char* field) -> std::int64_t {
    const auto s = run_ok(J(R"({"serverStatus": 1})"), "admin");
    return at(s, std::string("metrics.document.") + field).as<std::int64_t>();
  };
  const std::int64_t ins = count("inserted"), upd = count("updated"), del = count("deleted");
  insert("docs", R"([{"_id": 1, "a": 0}, {"_id": 2, "a": 0}, {"_id": 3, "a": 9}])");
  // Per document: a multi-update that changes two counts two; one that changes nothing, none.
  run_ok(
      J(R"({"update": "docs", "updates": [{"q": {"a": 0}, "u": {"$set": {"a": 1}}, "multi": true},
                                             {"q": {"_id": 3}, "u": {"$set": {"a": 9}}}]})"));
  run_ok(J(R"({"delete": "docs", "deletes": [{"q": {"_id": 3}, "limit": 1}]})"));
  EXPECT_EQ(count("inserted"), ins + 3);
  EXPECT_EQ(count("updated"), upd + 2);
  EXPECT_EQ(count("deleted"), del + 1);
}

TEST_F(commands, create_list_and_drop_collections) {
  run_ok(J(R"({"create": "a"})"));
  run_fail(J(R"({"create": "a"})"), 48);
  insert("b", R"([{"_id": 1}])");  // implicit creation
  auto r = run_ok(J(R"({"listCollections": 1})"));
  std::vector<std::string> names;
  for (const auto& c : batch(r))
    names.push_back(at(c.as_document(), "name").as_string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(at(r, "cursor.ns"), bson::value(db() + ".$cmd.listCollections"));
  EXPECT_TRUE(at(batch(r)[0].as_document(), "info.uuid").is<bson::binary>());
  r = run_ok(J(R"({"listCollections": 1, "filter": {"name": "b"}, "nameOnly": true})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(at(batch(r)[0].as_document(), "name"), bson::value("b"));

  r = run_ok(J(R"({"drop": "a"})"));
  EXPECT_EQ(at(r, "ns"), bson::value(db() + ".a"));
  run_fail(J(R"({"drop": "a"})"), 26);

  const auto dbs = run_ok(J(R"({"listDatabases": 1})"), "admin");
  bool found = false;
  for (const auto& d : at(dbs, "databases").as_array())
    found = found || at(d.as_document(), "name") == bson::value(db());
  EXPECT_TRUE(found);
  run_ok(J(R"({"dropDatabase": 1})"));
  r = run_ok(J(R"({"listCollections": 1})"));
  EXPECT_TRUE(batch(r).empty());
}

TEST_F(commands, rename_collection) {
  insert("from", R"([{"_id": 1}])");
  bson::document cmd;
  cmd.append("renameCollection", db() + ".from");
  cmd.append("to", db() + ".to");
  run_ok(cmd, "admin");
  EXPECT_EQ(find_all("to").size(), 1U);
  EXPECT_TRUE(find_all("from").empty());
  run_fail(cmd, 26, "admin");
}

TEST_F(commands, coll_mod_change_stream_pre_and_post_images) {
  run_fail(J(R"({"collMod": "nope", "changeStreamPreAndPostImages": {"enabled": true}})"), 26);
  run_ok(J(R"({"create": "c"})"));
  run_ok(J(R"({"collMod": "c", "changeStreamPreAndPostImages": {"enabled": true}})"));
  const auto r = run_ok(J(R"({"listCollections": 1, "filter": {"name": "c"}})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(at(batch(r)[0].as_document(), "options.changeStreamPreAndPostImages.enabled"),
            bson::value(true));
}

TEST_F(commands, indexes_create_list_drop_and_unique) {
  insert("c", R"([{"_id": 1, "a": 1, "b": "x"}, {"_id": 2, "a": 2, "b": "x"}])");
  auto r = run_ok(J(R"({"createIndexes": "c", "indexes": [
      {"key": {"a": 1}, "name": "a_1", "unique": true}, {"key": {"b": 1, "a": -1}}]})"));
  EXPECT_EQ(at(r, "numIndexesBefore"), i32(1));
  EXPECT_EQ(at(r, "numIndexesAfter"), i32(3));
  r = run_ok(J(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1",
                                                       "unique": true}]})"));
  EXPECT_EQ(at(r, "numIndexesAfter"), i32(3));
  run_fail(J(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"), 86);
  run_fail(J(R"({"createIndexes": "c", "indexes": [{"key": {"b": 1}, "unique": true}]})"), 11000);

  r = run_ok(J(R"({"listIndexes": "c"})"));
  std::vector<std::string> names;
  for (const auto& ix : batch(r))
    names.push_back(at(ix.as_document(), "name").as_string());
  EXPECT_EQ(names, (std::vector<std::string>{"_id_", "a_1", "b_1_a_-1"}));
  EXPECT_EQ(at(batch(r)[1].as_document(), "unique"), bson::value(true));
  run_fail(J(R"({"listIndexes": "missing"})"), 26);

  // The unique index rejects a duplicate with MongoDB's message, pattern and key.
  auto dup = run_ok(J(R"({"insert": "c", "documents": [{"_id": 3, "a": 1}]})"));
  ASSERT_TRUE(at(dup, "writeErrors").is_array());
  const auto& dup_error = at(dup, "writeErrors").as_array()[0].as_document();
  EXPECT_EQ(at(dup_error, "errmsg"), bson::value("E11000 duplicate key error collection: " + db() +
                                                 ".c index: a_1 dup key: { a: 1 }"));
  EXPECT_EQ(at(dup_error, "keyPattern"), bson::value(J(R"({"a": 1})")));
  EXPECT_EQ(at(dup_error, "keyValue"), bson::value(J(R"({"a": 1})")));
  // findAndModify returns it as the command's error, with the same two fields.
  auto fam = run_fail(
      J(R"({"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {"a": 1}}})"), 11000);
  EXPECT_EQ(at(fam, "codeName").as_string(), "DuplicateKey");
  EXPECT_EQ(at(fam, "keyPattern"), bson::value(J(R"({"a": 1})")));
  EXPECT_EQ(at(fam, "keyValue"), bson::value(J(R"({"a": 1})")));

  r = run_ok(J(R"({"dropIndexes": "c", "index": "a_1"})"));
  EXPECT_EQ(at(r, "nIndexesWas"), i32(3));
  run_fail(J(R"({"dropIndexes": "c", "index": "a_1"})"), 27);
  run_fail(J(R"({"dropIndexes": "c", "index": "_id_"})"), 72);
  run_ok(J(R"({"dropIndexes": "c", "index": "*"})"));
  r = run_ok(J(R"({"listIndexes": "c"})"));
  EXPECT_EQ(batch(r).size(), 1U);
  // Without the unique index the insert succeeds.
  run_ok(J(R"({"insert": "c", "documents": [{"_id": 3, "a": 1}]})"));
}

TEST_F(commands, insert_counts_and_duplicate_key_message) {
  auto r = run_ok(J(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})"));
  EXPECT_EQ(at(r, "n"), i32(2));
  r = run_ok(J(R"({"insert": "c", "documents": [{"_id": 3}, {"_id": 1}, {"_id": 4}]})"));
  EXPECT_EQ(at(r, "n"), i32(1));  // ordered: stops at the first error
  ASSERT_TRUE(at(r, "writeErrors").is_array());
  const auto& e = at(r, "writeErrors").as_array()[0].as_document();
  EXPECT_EQ(at(e, "index"), i32(1));
  EXPECT_EQ(at(e, "code"), i32(11000));
  EXPECT_EQ(at(e, "errmsg"), bson::value("E11000 duplicate key error collection: " + db() +
                                         ".c index: _id_ dup key: { _id: 1 }"));
  // MongoDB 4.4+: the index's pattern and the clashing key, between code and errmsg.
  EXPECT_EQ(at(e, "keyPattern"), bson::value(J(R"({"_id": 1})")));
  EXPECT_EQ(at(e, "keyValue"), bson::value(J(R"({"_id": 1})")));
  std::vector<std::string> names;
  for (const auto& f : e)
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"index", "code", "keyPattern", "keyValue", "errmsg"}));
  r = run_ok(J(R"({"insert": "c", "ordered": false,
                   "documents": [{"_id": 5}, {"_id": 1}, {"_id": 6}]})"));
  EXPECT_EQ(at(r, "n"), i32(2));
  EXPECT_EQ(find_all("c").size(), 5U);  // 1, 2, 3, 5, 6
  // A generated _id is an ObjectId placed first.
  run_ok(J(R"({"insert": "gen", "documents": [{"x": 1}]})"));
  const auto docs = find_all("gen");
  ASSERT_EQ(docs.size(), 1U);
  EXPECT_EQ(docs[0].fields().front().name, "_id");
  EXPECT_TRUE(docs[0].fields().front().val.is<bson::oid>());
  run_fail(J(R"({"insert": "c", "documents": []})"), 16);
  // Arrays cannot be _id.
  r = run_ok(J(R"({"insert": "c", "documents": [{"_id": [1]}]})"));
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "code"), i32(53));
}

TEST_F(commands, update_upsert_multi_replacement_and_no_op) {
  insert("c", R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3, "a": 2}])");
  auto r = run_ok(J(R"({"update": "c", "updates": [
      {"q": {"a": 1}, "u": {"$set": {"b": true}}, "multi": true}]})"));
  EXPECT_EQ(at(r, "n"), i32(2));
  EXPECT_EQ(at(r, "nModified"), i32(2));
  // A no-op matches but modifies nothing.
  r = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": true}}}]})"));
  EXPECT_EQ(at(r, "n"), i32(1));
  EXPECT_EQ(at(r, "nModified"), i32(0));
  // Upsert reports the new _id with its statement index.
  r = run_ok(J(R"({"update": "c", "updates": [
      {"q": {"_id": 1}, "u": {"$inc": {"n": 1}}},
      {"q": {"_id": 9, "k": "v"}, "u": {"$set": {"x": 1}, "$setOnInsert": {"y": 2}},
       "upsert": true}]})"));
  EXPECT_EQ(at(r, "n"), i32(2));
  EXPECT_EQ(at(r, "nModified"), i32(1));
  ASSERT_TRUE(at(r, "upserted").is_array());
  const auto& up = at(r, "upserted").as_array()[0].as_document();
  EXPECT_EQ(at(up, "index"), i32(1));
  EXPECT_EQ(at(up, "_id"), i32(9));
  auto docs = find_all("c", R"({"_id": 9})");
  ASSERT_EQ(docs.size(), 1U);
  EXPECT_EQ(docs[0], J(R"({"_id": 9, "k": "v", "x": 1, "y": 2})"));
  // Replacement keeps _id.
  r = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"z": 1}}]})"));
  EXPECT_EQ(at(r, "nModified"), i32(1));
  EXPECT_EQ(find_all("c", R"({"_id": 3})")[0], J(R"({"_id": 3, "z": 1})"));
  // multi + replacement is refused per statement.
  r = run_ok(J(R"({"update": "c", "updates": [{"q": {}, "u": {"z": 1}, "multi": true}]})"));
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "code"), i32(9));
  // Changing _id is refused, and the error keeps ok: 1.
  r = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$set": {"_id": 4}}}]})"));
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "code"), i32(66));
  EXPECT_EQ(at(r, "ok"), bson::value(1.0));
}

TEST_F(commands, update_array_filters_and_positional) {
  insert("c", R"([{"_id": 1, "items": [{"k": 1, "v": 0}, {"k": 2, "v": 0}, {"k": 1, "v": 0}]}])");
  run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1},
      "u": {"$set": {"items.$[i].v": 7}}, "arrayFilters": [{"i.k": 1}]}]})"));
  EXPECT_EQ(find_all("c")[0],
            J(R"({"_id": 1, "items": [{"k": 1, "v": 7}, {"k": 2, "v": 0}, {"k": 1, "v": 7}]})"));
  run_ok(J(R"({"update": "c", "updates": [{"q": {"items.k": 2},
      "u": {"$set": {"items.$.v": 9}}}]})"));
  EXPECT_EQ(at(find_all("c")[0], "items.1.v"), i32(9));
  auto r = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1},
      "u": {"$set": {"items.$[j].v": 1}}}]})"));
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "code"), i32(2));
}

TEST_F(commands, delete_with_limits) {
  insert("c", R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3, "a": 1}])");
  auto r = run_ok(J(R"({"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 1}]})"));
  EXPECT_EQ(at(r, "n"), i32(1));
  r = run_ok(J(R"({"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 0}]})"));
  EXPECT_EQ(at(r, "n"), i32(2));
  r = run_ok(J(R"({"delete": "missing", "deletes": [{"q": {}, "limit": 0}]})"));
  EXPECT_EQ(at(r, "n"), i32(0));
}

TEST_F(commands, find_and_modify) {
  insert("c", R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])");
  auto r = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 1},
                        "update": {"$inc": {"a": 10}}})"));
  EXPECT_EQ(at(r, "value"), bson::value(J(R"({"_id": 1, "a": 1})")));
  EXPECT_EQ(at(r, "lastErrorObject.n"), i32(1));
  EXPECT_EQ(at(r, "lastErrorObject.updatedExisting"), bson::value(true));
  r = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 1}, "new": true,
                   "update": {"$inc": {"a": 10}}})"));
  EXPECT_EQ(at(r, "value"), bson::value(J(R"({"_id": 1, "a": 21})")));
  r = run_ok(J(R"({"findAndModify": "c", "query": {}, "sort": {"a": -1}, "remove": true})"));
  EXPECT_EQ(at(r, "value._id"), i32(1));
  r = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 5}, "upsert": true, "new": true,
                   "update": {"$set": {"u": 1}}})"));
  EXPECT_EQ(at(r, "value"), bson::value(J(R"({"_id": 5, "u": 1})")));
  EXPECT_EQ(at(r, "lastErrorObject.updatedExisting"), bson::value(false));
  EXPECT_EQ(at(r, "lastErrorObject.upserted"), i32(5));
  r = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 99}, "remove": true})"));
  EXPECT_TRUE(at(r, "value").is_null());
  EXPECT_EQ(at(r, "lastErrorObject.n"), i32(0));
  run_fail(J(R"({"findAndModify": "c", "query": {}})"), 9);
}

TEST_F(commands, find_filter_sort_skip_limit_projection) {
  insert("c", R"([{"_id": 1, "a": 3, "b": "x"}, {"_id": 2, "a": 1, "b": "y"},
                  {"_id": 3, "a": 2, "b": "x"}, {"_id": 4, "a": 5, "b": "x"}])");
  auto docs = find_all("c", R"({"b": "x"})", R"({"sort": {"a": -1}, "skip": 1, "limit": 2})");
  ASSERT_EQ(docs.size(), 2U);
  EXPECT_EQ(at(docs[0], "_id"), i32(1));
  EXPECT_EQ(at(docs[1], "_id"), i32(3));
  docs = find_all("c", R"({"a": {"$gte": 2}})", R"({"projection": {"a": 1}, "sort": {"_id": 1}})");
  ASSERT_EQ(docs.size(), 3U);
  EXPECT_EQ(docs[0], J(R"({"_id": 1, "a": 3})"));
  docs = find_all("c", R"({"_id": 2})", R"({"projection": {"_id": 0, "b": 1}})");
  ASSERT_EQ(docs.size(), 1U);
  EXPECT_EQ(docs[0], J(R"({"b": "y"})"));
  run_fail(J(R"({"find": "c", "filter": {"a": {"$bogus": 1}}})"), 2);
  run_fail(J(R"({"find": "c", "skip": -1})"), 51024);
}

TEST_F(commands, find_batches_get_more_and_kill_cursors) {
  bson::array docs;
  for (int i = 0; i < 250; ++i)
    docs.emplace_back(bson::document{{"_id", std::int32_t{i}}});
  bson::document ins;
  ins.append("insert", "c");
  ins.append("documents", std::move(docs));
  run_ok(ins);
  auto r = run_ok(J(R"({"find": "c"})"));
  EXPECT_EQ(batch(r).size(), 101U);  // MongoDB's default first batch
  EXPECT_EQ(at(r, "cursor.ns"), bson::value(db() + ".c"));
  ASSERT_NE(cursor_id(r), 0);
  bson::document gm;
  gm.append("getMore", cursor_id(r));
  gm.append("collection", "c");
  gm.append("batchSize", std::int32_t{100});
  auto more = run_ok(gm);
  EXPECT_EQ(batch(more).size(), 100U);
  EXPECT_EQ(at(batch(more)[0].as_document(), "_id"), i32(101));
  gm.set("batchSize", std::int32_t{0});
  more = run_ok(gm);
  EXPECT_EQ(batch(more).size(), 49U);
  EXPECT_EQ(cursor_id(more), 0);
  run_fail(gm, 43);

  r = run_ok(J(R"({"find": "c", "batchSize": 2})"));
  EXPECT_EQ(batch(r).size(), 2U);
  bson::document kill;
  kill.append("killCursors", "c");
  kill.append("cursors", bson::array{bson::value(cursor_id(r)), bson::value(std::int64_t{12345})});
  const auto k = run_ok(kill);
  EXPECT_EQ(at(k, "cursorsKilled"), bson::value(bson::array{bson::value(cursor_id(r))}));
  EXPECT_EQ(at(k, "cursorsNotFound"), bson::value(bson::array{bson::value(std::int64_t{12345})}));
  gm.set("getMore", cursor_id(r));
  run_fail(gm, 43);

  // The driver's cursor iterates everything.
  auto coll = collection("c");
  auto filter = bson::to_bson(J("{}"));
  auto opts = bson::to_bson(J(R"({"batchSize": 7})"));
  denormd::test::cursor_ptr cursor(
      mongoc_collection_find_with_opts(coll.get(), filter.get(), opts.get(), nullptr));
  const bson_t* doc = nullptr;
  int n = 0;
  while (mongoc_cursor_next(cursor.get(), &doc))
    ++n;
  EXPECT_EQ(n, 250);
}

// local.oplog.rs answers the reads rs.printReplicationInfo() makes: the oldest and the newest
// entry by {$natural: 1} and {$natural: -1}, limit 1.
TEST_F(commands, oplog_rs_serves_the_newest_entry_in_natural_order) {
  insert("c", R"([{"_id": 1}, {"_id": 2}])");
  bson::document newest_cmd{{"find", "oplog.rs"},
                            {"filter", bson::document{}},
                            {"sort", J(R"({"$natural": -1})")},
                            {"limit", std::int32_t{1}}};
  const auto reply = run_ok(newest_cmd, "local");
  EXPECT_EQ(at(reply, "cursor.ns"), bson::value("local.oplog.rs"));
  EXPECT_EQ(at(reply, "cursor.id"), bson::value(std::int64_t{0}));
  ASSERT_EQ(batch(reply).size(), 1U);
  const auto newest = batch(reply)[0].as_document();
  EXPECT_EQ(at(newest, "op"), bson::value("i"));
  EXPECT_EQ(at(newest, "ns"), bson::value(db() + ".c"));
  EXPECT_EQ(at(newest, "o"), bson::value(J(R"({"_id": 2})")));
  EXPECT_TRUE(at(newest, "ts").is<bson::timestamp>());
  EXPECT_TRUE(at(newest, "wall").is<bson::date_time>());
  EXPECT_TRUE(at(newest, "ui").is<bson::binary>());
  // The insert's own operationTime is that entry's ts.
  const auto last = run_ok(J(R"({"insert": "c", "documents": [{"_id": 3}]})"));
  const auto after = batch(run_ok(newest_cmd, "local"))[0].as_document();
  EXPECT_EQ(at(after, "ts"), at(last, "operationTime"));
  EXPECT_LT(at(newest, "ts").as<bson::timestamp>(), at(after, "ts").as<bson::timestamp>());
  // A filter and a projection apply as to any collection.
  bson::document mine{{"find", "oplog.rs"},
                      {"filter", bson::document{{"ns", db() + ".c"}, {"op", "i"}}},
                      {"projection", J(R"({"ts": 1, "_id": 0})")},
                      {"sort", J(R"({"$natural": 1})")}};
  const auto ours = batch(run_ok(mine, "local"));
  ASSERT_EQ(ours.size(), 3U);
  EXPECT_EQ(ours[0].as_document().size(), 1U);
  EXPECT_LT(at(ours[0].as_document(), "ts").as<bson::timestamp>(),
            at(ours[2].as_document(), "ts").as<bson::timestamp>());
  bson::document bad{{"find", "oplog.rs"}, {"sort", J(R"({"$natural": 2})")}};
  EXPECT_EQ(at(run_fail(bad, 2, "local"), "errmsg"),
            bson::value("$natural sort cannot be set to a value other than -1 or 1."));
}

TEST_F(commands, natural_sort_reverses_a_collection) {
  insert("c", R"([{"_id": 3}, {"_id": 1}, {"_id": 2}])");
  std::vector<bson::value> ids;
  for (const auto& d : find_all("c", "{}", R"({"sort": {"$natural": -1}})"))
    ids.push_back(*d.get("_id"));
  EXPECT_EQ(ids, (std::vector<bson::value>{i32(2), i32(1), i32(3)}));
}

// Emulator-only: the oldest kept entry moves as the bounded history drops old ones.
TEST(oplog_rs, the_oldest_entry_is_the_oldest_kept) {
  if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs --oplog-max-events";
  auto server = denormd::test::emulator_process::start({"--oplog-max-events", "3"});
  ASSERT_TRUE(server) << server.error().message;
  auto c = test_client::connect(server->uri());
  ASSERT_TRUE(c);
  const auto oldest = [&] {
    auto r = c->command("local", J(R"({"find": "oplog.rs", "filter": {}, "sort": {"$natural": 1},
                                       "limit": 1, "projection": {"ts": 1, "o": 1}})"));
    EXPECT_TRUE(r);
    const auto& docs = at(*r, "cursor.firstBatch").as_array();
    EXPECT_EQ(docs.size(), 1U);
    return docs.empty() ? bson::document{} : docs[0].as_document();
  };
  // create (implicit) and the inserts of 0..9: the last three inserts are kept.
  for (int i = 0; i < 10; ++i) {
    bson::document ins{
        {"insert", "c"},
        {"documents", bson::array{bson::value(bson::document{{"_id", std::int32_t{i}}})}}};
    ASSERT_TRUE(c->command("h", ins));
  }
  const auto first = oldest();
  EXPECT_EQ(at(first, "o"), bson::value(J(R"({"_id": 7})")));
  ASSERT_TRUE(c->command("h", J(R"({"insert": "c", "documents": [{"_id": 10}]})")));
  const auto second = oldest();
  EXPECT_EQ(at(second, "o"), bson::value(J(R"({"_id": 8})")));
  EXPECT_LT(at(first, "ts").as<bson::timestamp>(), at(second, "ts").as<bson::timestamp>());
  EXPECT_EQ(server->stop(), 0);
}

TEST_F(commands, count_and_aggregate) {
  insert("c", R"([{"_id": 1, "g": "a", "v": 1}, {"_id": 2, "g": "b", "v": 2},
                  {"_id": 3, "g": "a", "v": 3}])");
  EXPECT_EQ(at(run_ok(J(R"({"count": "c"})")), "n"), i32(3));
  EXPECT_EQ(at(run_ok(J(R"({"count": "c", "query": {"g": "a"}})")), "n"), i32(2));
  EXPECT_EQ(at(run_ok(J(R"({"count": "missing"})")), "n"), i32(0));
  auto r = run_ok(J(R"({"aggregate": "c", "pipeline": [
      {"$match": {"v": {"$gte": 1}}}, {"$group": {"_id": "$g", "total": {"$sum": "$v"}}},
      {"$sort": {"_id": 1}}], "cursor": {}})"));
  ASSERT_EQ(batch(r).size(), 2U);
  EXPECT_EQ(at(batch(r)[0].as_document(), "total"), i32(4));
  EXPECT_EQ(at(batch(r)[1].as_document(), "total"), i32(2));
  r = run_ok(J(R"({"aggregate": "c", "pipeline": [{"$sort": {"v": -1}}, {"$skip": 1},
      {"$limit": 1}, {"$project": {"v": 1, "_id": 0}}], "cursor": {}})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(batch(r)[0].as_document(), J(R"({"v": 2})"));
  // libmongoc's count_documents runs an aggregate with $group/$sum.
  auto coll = collection("c");
  auto filter = bson::to_bson(J(R"({"g": "a"})"));
  bson_error_t error;
  EXPECT_EQ(mongoc_collection_count_documents(coll.get(), filter.get(), nullptr, nullptr, nullptr,
                                              &error),
            2)
      << error.message;
  run_fail(J(R"({"aggregate": "c", "pipeline": []})"), 9);
}

// MongoDB compares numbers of different types by exact value: a decimal past double
// precision is not the double it rounds to (docs/architecture.md).
TEST_F(commands, decimals_compare_with_other_numbers_by_exact_value) {
  insert("c", R"([{"_id": 1, "v": 4}, {"_id": 2, "v": {"$numberDecimal": "4.00000000000000000001"}},
                  {"_id": 3, "v": 0.1}, {"_id": 4, "v": {"$numberDecimal": "0.1"}},
                  {"_id": 5, "v": {"$numberDecimal": "4.00"}}])");
  const auto ids = [&](std::string_view filter, std::string_view opts = R"({"sort": {"_id": 1}})") {
    std::vector<std::int32_t> out;
    for (const auto& d : find_all("c", filter, opts))
      out.push_back(at(d, "_id").as<std::int32_t>());
    return out;
  };
  using ids_t = std::vector<std::int32_t>;
  EXPECT_EQ(ids(R"({"v": 4})"), (ids_t{1, 5}));
  EXPECT_EQ(ids(R"({"v": {"$gt": 4}})"), (ids_t{2}));
  EXPECT_EQ(ids(R"({"v": {"$lt": 0.1}})"), (ids_t{4}));
  EXPECT_EQ(ids(R"({"v": {"$in": [0.1]}})"), (ids_t{3}));
  EXPECT_EQ(ids("{}", R"({"sort": {"v": 1, "_id": 1}})"), (ids_t{4, 3, 1, 5, 2}));

  auto r = run_ok(J(R"({"aggregate": "c", "pipeline": [
      {"$group": {"_id": "$v", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}], "cursor": {}})"));
  ASSERT_EQ(batch(r).size(), 4U);
  EXPECT_EQ(at(batch(r)[2].as_document(), "n"), i32(2));  // 4 and 4.00
  r = run_ok(J(R"({"aggregate": "c", "pipeline": [{"$group": {"_id": null,
      "lo": {"$min": "$v"}, "hi": {"$max": "$v"}}}], "cursor": {}})"));
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_EQ(at(batch(r)[0].as_document(), "lo"), at(J(R"({"v": {"$numberDecimal": "0.1"}})"), "v"));
  EXPECT_EQ(at(batch(r)[0].as_document(), "hi"),
            at(J(R"({"v": {"$numberDecimal": "4.00000000000000000001"}})"), "v"));

  insert("p", R"([{"_id": 1, "a": []}])");
  run_ok(J(R"({"update": "p", "updates": [{"q": {"_id": 1}, "u": {"$push": {"a": {"$each": [
      {"$numberDecimal": "4.00000000000000000001"}, 4, 0.1, {"$numberDecimal": "0.1"}],
      "$sort": 1}}}}]})"));
  EXPECT_EQ(at(find_all("p")[0], "a"), bson::value(A(R"([{"$numberDecimal": "0.1"}, 0.1, 4,
      {"$numberDecimal": "4.00000000000000000001"}])")));

  // The _id index: 4.00000000000000000001 is another key than 4, 4.0 the same.
  insert("k", R"([{"_id": 4}, {"_id": {"$numberDecimal": "4.00000000000000000001"}}])");
  EXPECT_EQ(find_all("k").size(), 2U);
  r = run_ok(J(R"({"insert": "k", "documents": [{"_id": {"$numberDecimal": "4.0"}}]})"));
  ASSERT_TRUE(at(r, "writeErrors").is_array());
  EXPECT_EQ(at(at(r, "writeErrors").as_array()[0].as_document(), "code"), i32(11000));
}

TEST_F(commands, documents_are_limited_to_16_mb) {
  const std::string big(9 * 1024 * 1024, 'x');
  bson::document ins;
  ins.append("insert", "c");
  ins.append("documents",
             bson::array{bson::value(bson::document{{"_id", std::int32_t{1}}, {"a", big}})});
  run_ok(ins);
  bson::document upd;
  upd.append("update", "c");
  upd.append("updates", bson::array{bson::value(bson::document{
                            {"q", bson::document{{"_id", std::int32_t{1}}}},
                            {"u", bson::document{{"$set", bson::document{{"b", big}}}}}})});
  auto r = run_ok(upd);
  ASSERT_TRUE(at(r, "writeErrors").is_array());
  const auto& e = at(r, "writeErrors").as_array()[0].as_document();
  EXPECT_EQ(at(e, "code"), bson::value(std::int32_t{17419}));
  EXPECT_EQ(at(e, "errmsg"),
            bson::value("Resulting document after update is larger than 16777216"));
  // The document is unchanged.
  EXPECT_EQ(at(batch(run_ok(J(R"({"find": "c", "projection": {"b": 1}})")))[0].as_document(), "b"),
            bson::value());
}

TEST_F(commands, write_concern_on_one_node) {
  auto r = run_ok(J(R"({"insert": "c", "documents": [{"_id": 1}],
                        "writeConcern": {"w": "majority"}})"));
  EXPECT_FALSE(r.contains("writeConcernError"));
  auto raw = run(J(R"({"insert": "c", "documents": [{"_id": 2}], "writeConcern": {"w": 3}})"));
  EXPECT_EQ(at(raw.reply, "writeConcernError.code"), i32(100));
}

}  // namespace
}  // namespace mongo_emulator::test
