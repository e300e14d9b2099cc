// Enforcement with --auth: each command refused with 13 without the privilege MongoDB asks for
// and allowed with it (find, insert, update, remove, change streams on a collection and a
// database, findAndModify, upserts, listCollections), MongoDB's message shapes, cursors and
// sessions that belong to the user who opened them.

#include <gtest/gtest.h>

#include "auth_server.h"

namespace mongo_emulator::test {
namespace {

class command_authorizer_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs a server of its own";
    server_ = auth_server::start();
    ASSERT_TRUE(server_);
    admin_run(R"({"insert": "c", "documents": [{"_id": 1, "n": 0}, {"_id": 2, "n": 0}]})");
    admin_run(R"({"createRole": "r", "privileges": [], "roles": []})", "admin");
    server_->create_user("u", "pw", R"(["r"])");
  }
  void admin_run(std::string_view json, std::string_view db = "shop") {
    auto r = server_->admin().command(db, J(json));
    ASSERT_TRUE(r) << json << ": " << r.error().message;
  }
  // Gives the role `actions` on shop.c (and nothing else).
  void grant(std::string_view actions_json) {
    admin_run(R"({"updateRole": "r", "privileges": [{"resource": {"db": "shop", "collection": "c"},
                                                   "actions": )" +
                  std::string(actions_json) + "}]}",
              "admin");
  }
  std::unique_ptr<auth_server> server_;
};

struct case_t {
  const char* name;
  const char* command;
  const char* actions;  // what MongoDB asks for
};

TEST_F(command_authorizer_test, each_command_needs_its_privileges) {
  const case_t cases[] = {
      {"find", R"({"find": "c"})", R"(["find"])"},
      {"count", R"({"count": "c"})", R"(["find"])"},
      {"distinct", R"({"distinct": "c", "key": "n"})", R"(["find"])"},
      {"aggregate", R"({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}})",
       R"(["find"])"},
      {"insert", R"({"insert": "c", "documents": [{"_id": 10}]})", R"(["insert"])"},
      {"update", R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]})",
       R"(["update"])"},
      {"upsert",
       R"({"update": "c", "updates": [{"q": {"_id": 3}, "u": {"$inc": {"n": 1}}, "upsert": true}]})",
       R"(["update", "insert"])"},
      {"delete", R"({"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]})", R"(["remove"])"},
      {"findAndModify",
       R"({"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"m": 1}}})",
       R"(["find", "update"])"},
      {"changeStream", R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})",
       R"(["changeStream", "find"])"},
      {"createIndexes", R"({"createIndexes": "c", "indexes": [{"key": {"n": 1}, "name": "n_1"}]})",
       R"(["createIndex"])"},
      {"listIndexes", R"({"listIndexes": "c"})", R"(["listIndexes"])"},
  };
  auto u = server_->login("u", "pw");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto all = A(c.actions);
    // Every action but one, then all of them.
    for (std::size_t missing = 0; missing < all.size(); ++missing) {
      bson::array some;
      for (std::size_t i = 0; i < all.size(); ++i)
        if (i != missing) some.push_back(all[i]);
      grant(bson::to_json(bson::value(some)));
      const auto refused = u.run("shop", J(c.command));
      EXPECT_EQ(refused.code, 13) << "without " << bson::to_json(all[missing]);
    }
    grant(c.actions);
    const auto allowed = u.run("shop", J(c.command));
    EXPECT_TRUE(allowed.ok) << allowed.message;
  }
}

TEST_F(command_authorizer_test, refusals_read_as_mongodbs) {
  auto u = server_->login("u", "pw");
  const auto r = u.run("shop", J(R"({"find": "c", "filter": {"n": 1.0}})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(at(r.reply, "codeName"), bson::value("Unauthorized"));
  EXPECT_TRUE(r.message.starts_with(
      R"(not authorized on shop to execute command { find: "c", filter: { n: 1.0 }, )"))
      << r.message;
  EXPECT_NE(r.message.find(R"(lsid: { id: UUID(")"), std::string::npos) << r.message;
  // The body as the driver sent it (libmongoc puts $db before lsid).
  EXPECT_NE(r.message.find(R"($db: "shop")"), std::string::npos) << r.message;
  EXPECT_TRUE(r.message.ends_with(" }")) << r.message;
  // The documents of an insert travel as a document sequence, which the message leaves out.
  auto coll = server_->login("u", "pw");
  const auto w = coll.run("shop", J(R"({"insert": "c", "documents": [{"_id": 5}]})"));
  EXPECT_EQ(w.code, 13);
  EXPECT_TRUE(w.message.starts_with(R"(not authorized on shop to execute command { insert: "c")"));
  // The password of createUser is never shown.
  const auto p = u.run("admin", J(R"({"createUser": "x", "pwd": "secret", "roles": []})"));
  EXPECT_EQ(p.code, 13);
  EXPECT_NE(p.message.find(R"(pwd: "xxx")"), std::string::npos) << p.message;
  EXPECT_EQ(p.message.find("secret"), std::string::npos);
}

TEST_F(command_authorizer_test, database_and_cluster_change_streams_need_broader_privileges) {
  grant(R"(["find", "changeStream"])");
  auto u = server_->login("u", "pw");
  const char* db_stream = R"({"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}})";
  EXPECT_EQ(u.run("shop", J(db_stream)).code, 13);
  admin_run(R"({"updateRole": "r", "privileges": [{"resource": {"db": "shop", "collection": ""},
                                                   "actions": ["find", "changeStream"]}]})",
            "admin");
  EXPECT_TRUE(u.command("shop", J(db_stream)));
  const char* cluster_stream =
      R"({"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": true}}],
          "cursor": {}})";
  EXPECT_EQ(u.run("admin", J(cluster_stream)).code, 13);
  admin_run(R"({"updateRole": "r", "privileges": [{"resource": {"db": "", "collection": ""},
                                                   "actions": ["find", "changeStream"]}]})",
            "admin");
  EXPECT_TRUE(u.command("admin", J(cluster_stream)));
}

TEST_F(command_authorizer_test, list_collections_needs_the_action_or_authorized_collections) {
  admin_run(R"({"insert": "other", "documents": [{"_id": 1}]})");
  grant(R"(["find"])");
  auto u = server_->login("u", "pw");
  EXPECT_EQ(u.run("shop", J(R"({"listCollections": 1, "nameOnly": true})")).code, 13);
  auto r = u.command("shop", J(R"({"listCollections": 1, "nameOnly": true,
                                   "authorizedCollections": true})"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(at(*r, "cursor.firstBatch"),
            bson::value(A(R"([{"name": "c", "type": "collection"}])")));
  // listDatabases lists only what the user has privileges in.
  r = u.command("admin", J(R"({"listDatabases": 1, "nameOnly": true})"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(at(*r, "databases"), bson::value(A(R"([{"name": "shop"}])")));
  EXPECT_EQ(u.run("admin", J(R"({"listDatabases": 1, "authorizedDatabases": false})")).code, 13);
}

TEST_F(command_authorizer_test, cursors_belong_to_their_user) {
  grant(R"(["find"])");
  server_->create_user("v", "pw", R"(["r"])");
  auto u = server_->login("u", "pw");
  auto v = server_->login("v", "pw");
  auto opened = u.command("shop", J(R"({"find": "c", "batchSize": 1})"));
  ASSERT_TRUE(opened);
  const auto id = at(*opened, "cursor.id").as<std::int64_t>();
  ASSERT_NE(id, 0);
  const auto other = v.run("shop", bson::document{{"getMore", id}, {"collection", "c"}});
  EXPECT_EQ(other.code, 13);
  EXPECT_EQ(other.message,
            "cursor id " + std::to_string(id) + " was not created by the authenticated user");
  EXPECT_EQ(
      v.run("shop", bson::document{{"killCursors", "c"}, {"cursors", bson::array{bson::value(id)}}})
          .code,
      13);
  EXPECT_TRUE(u.command("shop", bson::document{{"getMore", id}, {"collection", "c"}}));
  EXPECT_TRUE(u.command(
      "shop", bson::document{{"killCursors", "c"}, {"cursors", bson::array{bson::value(id)}}}));
}

using session_ptr = denormd::c_handle<mongoc_client_session_t, mongoc_client_session_destroy>;

// Inserts {_id: id} into shop.c in a new transaction of `s`; false on error.
bool insert_in_transaction(test_client& c, mongoc_client_session_t* s, int id) {
  bson_error_t error;
  if (!mongoc_client_session_start_transaction(s, nullptr, &error)) return false;
  bson_t opts = BSON_INITIALIZER;
  const bool appended = mongoc_client_session_append(s, &opts, &error);
  auto doc = bson::to_bson(bson::document{{"_id", std::int32_t{id}}});
  auto coll = c.collection("shop", "c");
  const bool ok =
      appended && mongoc_collection_insert_one(coll.get(), doc.get(), &opts, nullptr, &error);
  bson_destroy(&opts);
  return ok;
}

// MongoDB keys a session by its id and its user: killSessions by another user ends nothing.
TEST_F(command_authorizer_test, kill_sessions_ends_only_the_callers_sessions) {
  grant(R"(["find", "insert"])");
  server_->create_user("v", "pw", R"(["r"])");
  auto u = server_->login("u", "pw");
  auto v = server_->login("v", "pw");
  bson_error_t error;
  session_ptr s(mongoc_client_start_session(u.get(), nullptr, &error));
  ASSERT_TRUE(s) << error.message;
  auto lsid = bson::from_bson(*mongoc_client_session_get_lsid(s.get()));
  ASSERT_TRUE(lsid);
  const bson::document kill{{"killSessions", bson::array{bson::value(*lsid)}}};
  ASSERT_TRUE(insert_in_transaction(u, s.get(), 20));
  ASSERT_TRUE(v.command("admin", kill));
  EXPECT_TRUE(mongoc_client_session_commit_transaction(s.get(), nullptr, &error)) << error.message;
  ASSERT_TRUE(insert_in_transaction(u, s.get(), 21));
  ASSERT_TRUE(u.command("admin", kill));
  EXPECT_FALSE(mongoc_client_session_commit_transaction(s.get(), nullptr, &error));
  EXPECT_EQ(error.code, 251U) << error.message;
}

TEST_F(command_authorizer_test, cluster_commands_need_cluster_privileges) {
  auto u = server_->login("u", "pw");
  EXPECT_EQ(u.run("admin", J(R"({"serverStatus": 1})")).code, 13);
  EXPECT_EQ(u.run("admin", J(R"({"replSetStepDown": 60, "force": true})")).code, 13);
  EXPECT_TRUE(u.command("admin", J(R"({"endSessions": []})")));
  admin_run(R"({"grantRolesToUser": "u", "roles": [{"role": "clusterMonitor", "db": "admin"}]})",
            "admin");
  EXPECT_TRUE(u.command("admin", J(R"({"serverStatus": 1})")));
  // Fail points need no authentication on MongoDB either (test commands).
  EXPECT_TRUE(server_->anonymous().command(
      "admin", J(R"({"configureFailPoint": "failCommand", "mode": "off"})")));
}

}  // namespace
}  // namespace mongo_emulator::test
