// User and role management with --auth: the shapes of usersInfo and rolesInfo answers,
// MongoDB's errors, and changes to users and roles taking effect on connections already
// logged in.

#include <gtest/gtest.h>

#include "auth_server.h"

namespace mongo_emulator::test {
namespace {

std::vector<std::string> keys(const bson::value& v) {
  std::vector<std::string> out;
  for (const auto& f : v.as_document())
    out.push_back(f.name);
  return out;
}

class user_commands : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs a server of its own";
    server_ = auth_server::start();
    ASSERT_TRUE(server_);
  }
  bson::document run_ok(std::string_view json, std::string_view db = "admin") {
    auto r = server_->admin().command(db, J(json));
    EXPECT_TRUE(r) << json << ": " << r.error().message;
    return r ? *r : bson::document{};
  }
  int run_fail(std::string_view json, std::string_view db = "admin") {
    const auto r = server_->admin().run(db, J(json));
    EXPECT_FALSE(r.ok) << json;
    return r.code;
  }
  std::unique_ptr<auth_server> server_;
};

TEST_F(user_commands, users_info_shape) {
  server_->create_user("denormd", "pw", R"([{"role": "read", "db": "shop"}])",
                       R"({"customData": {"team": "data"}})");
  auto r = run_ok(R"({"usersInfo": "denormd"})");
  const auto& users = at(r, "users").as_array();
  ASSERT_EQ(users.size(), 1U);
  const auto& u = users[0];
  EXPECT_EQ(keys(u), (std::vector<std::string>{"_id", "userId", "user", "db", "customData", "roles",
                                               "mechanisms"}));
  EXPECT_EQ(at(u.as_document(), "_id"), bson::value("admin.denormd"));
  const auto& id = at(u.as_document(), "userId");
  ASSERT_TRUE(id.is<bson::binary>());
  EXPECT_EQ(id.as<bson::binary>().subtype, 4);
  EXPECT_EQ(id.as<bson::binary>().data.size(), 16U);
  EXPECT_EQ(at(u.as_document(), "roles"), bson::value(A(R"([{"role": "read", "db": "shop"}])")));
  EXPECT_EQ(at(u.as_document(), "mechanisms"),
            bson::value(A(R"(["SCRAM-SHA-1", "SCRAM-SHA-256"])")));
  EXPECT_EQ(at(u.as_document(), "customData"), bson::value(J(R"({"team": "data"})")));

  r = run_ok(R"({"usersInfo": {"user": "denormd", "db": "admin"}, "showPrivileges": true,
                 "showCredentials": true})");
  const auto& p = at(r, "users").as_array().at(0);
  EXPECT_EQ(keys(p), (std::vector<std::string>{"_id", "userId", "user", "db", "mechanisms",
                                               "credentials", "customData", "roles",
                                               "inheritedRoles", "inheritedPrivileges"}));
  EXPECT_EQ(at(p.as_document(), "inheritedRoles"),
            bson::value(A(R"([{"role": "read", "db": "shop"}])")));
  EXPECT_EQ(at(p.as_document(), "credentials.SCRAM-SHA-1.iterationCount"),
            bson::value(std::int32_t{10000}));
  EXPECT_EQ(at(p.as_document(), "credentials.SCRAM-SHA-256.iterationCount"),
            bson::value(std::int32_t{15000}));
  const auto& privileges = at(p.as_document(), "inheritedPrivileges").as_array();
  EXPECT_NE(std::find(privileges.begin(), privileges.end(),
                      bson::value(J(R"({"resource": {"db": "shop", "collection": ""},
                          "actions": ["changeStream", "collStats", "dbHash", "dbStats", "find",
                                      "killCursors", "listCollections", "listIndexes",
                                      "planCacheRead"]})"))),
            privileges.end());

  r = run_ok(R"({"usersInfo": 1})");
  EXPECT_EQ(at(r, "users").as_array().size(), 2U);  // admin and denormd, sorted by name
  EXPECT_EQ(at(at(r, "users").as_array()[0].as_document(), "user"), bson::value("admin"));
  EXPECT_EQ(at(run_ok(R"({"usersInfo": "nobody"})"), "users"), bson::value(bson::array{}));
  EXPECT_EQ(at(run_ok(R"({"usersInfo": 1})", "shop"), "users"), bson::value(bson::array{}));
}

TEST_F(user_commands, roles_info_shape) {
  run_ok(R"({"createRole": "reader", "roles": [{"role": "read", "db": "reports"}],
             "privileges": [{"resource": {"db": "shop", "collection": "orders"},
                             "actions": ["update", "find"]}]})");
  auto r = run_ok(R"({"rolesInfo": "reader", "showPrivileges": true})");
  const auto& role = at(r, "roles").as_array().at(0);
  EXPECT_EQ(keys(role),
            (std::vector<std::string>{"_id", "role", "db", "privileges", "roles", "inheritedRoles",
                                      "inheritedPrivileges", "isBuiltin"}));
  EXPECT_EQ(at(role.as_document(), "_id"), bson::value("admin.reader"));
  EXPECT_EQ(at(role.as_document(), "isBuiltin"), bson::value(false));
  EXPECT_EQ(at(role.as_document(), "privileges"),
            bson::value(A(R"([{"resource": {"db": "shop", "collection": "orders"},
                               "actions": ["find", "update"]}])")));
  EXPECT_EQ(at(role.as_document(), "inheritedRoles"),
            bson::value(A(R"([{"role": "read", "db": "reports"}])")));
  EXPECT_EQ(at(role.as_document(), "inheritedPrivileges").as_array().size(), 3U)
      << "its own, and read's two on reports";

  r = run_ok(R"({"rolesInfo": "reader"})");
  EXPECT_EQ(
      keys(at(r, "roles").as_array().at(0)),
      (std::vector<std::string>{"_id", "role", "db", "roles", "inheritedRoles", "isBuiltin"}));
  r = run_ok(R"({"rolesInfo": {"role": "read", "db": "shop"}, "showPrivileges": true})");
  const auto& builtin = at(r, "roles").as_array().at(0);
  EXPECT_EQ(keys(builtin),
            (std::vector<std::string>{"db", "role", "roles", "privileges", "inheritedRoles",
                                      "inheritedPrivileges", "isBuiltin"}));
  EXPECT_EQ(at(builtin.as_document(), "isBuiltin"), bson::value(true));
  r = run_ok(R"({"rolesInfo": 1, "showBuiltinRoles": true})", "shop");
  EXPECT_EQ(at(r, "roles").as_array().size(), 6U);
  EXPECT_EQ(at(run_ok(R"({"rolesInfo": "nosuch"})"), "roles"), bson::value(bson::array{}));
}

TEST_F(user_commands, errors_are_mongodbs) {
  EXPECT_EQ(run_fail(R"({"createUser": "admin", "pwd": "x", "roles": []})"), 51003);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "pwd": "x", "roles": ["nosuch"]})"), 31);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "roles": []})"), 2);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "pwd": "x"})"), 40414);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "pwd": "", "roles": []})"), 2);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "pwd": "x", "roles": [], "mechanisms": ["PLAIN"]})"),
            2);
  EXPECT_EQ(run_fail(R"({"createRole": "read", "privileges": [], "roles": []})", "shop"), 2);
  EXPECT_EQ(run_fail(R"({"createRole": "r", "roles": [],
                         "privileges": [{"resource": {"db": "a", "collection": "b"},
                                         "actions": ["fnd"]}]})"),
            2);
  EXPECT_EQ(run_fail(R"({"createRole": "r", "roles": [],
                         "privileges": [{"resource": {"db": "other", "collection": ""},
                                         "actions": ["find"]}]})",
                     "shop"),
            2);
  run_ok(R"({"createRole": "r", "privileges": [], "roles": []})");
  EXPECT_EQ(run_fail(R"({"createRole": "r", "privileges": [], "roles": []})"), 51002);
  run_ok(R"({"createRole": "s", "privileges": [], "roles": ["r"]})");
  EXPECT_EQ(run_fail(R"({"updateRole": "r", "roles": ["s"]})"), 49);
  EXPECT_EQ(run_fail(R"({"dropUser": "nobody"})"), 11);
  EXPECT_EQ(run_fail(R"({"dropRole": "nosuch"})"), 31);
  EXPECT_EQ(run_fail(R"({"updateUser": "admin"})"), 2);
  EXPECT_EQ(run_fail(R"({"createUser": "u", "pwd": "x", "roles": [],
                         "authenticationRestrictions": []})"),
            238);
}

TEST_F(user_commands, changes_apply_to_connections_already_logged_in) {
  server_->create_user("u", "pw", "[]");
  auto u = server_->login("u", "pw");
  EXPECT_EQ(u.run("shop", J(R"({"insert": "c", "documents": [{"_id": 1}]})")).code, 13);
  run_ok(R"({"grantRolesToUser": "u", "roles": [{"role": "readWrite", "db": "shop"}]})");
  EXPECT_TRUE(u.command("shop", J(R"({"insert": "c", "documents": [{"_id": 1}]})")));
  run_ok(R"({"revokeRolesFromUser": "u", "roles": [{"role": "readWrite", "db": "shop"}]})");
  EXPECT_EQ(u.run("shop", J(R"({"find": "c"})")).code, 13);
  // Through a role: updating the role changes what its users may do.
  run_ok(R"({"createRole": "r", "privileges": [], "roles": []})");
  run_ok(R"({"updateUser": "u", "roles": ["r"]})");
  EXPECT_EQ(u.run("shop", J(R"({"find": "c"})")).code, 13);
  run_ok(R"({"updateRole": "r", "privileges": [{"resource": {"db": "shop", "collection": "c"},
                                                 "actions": ["find"]}]})");
  EXPECT_TRUE(u.command("shop", J(R"({"find": "c"})")));
  run_ok(R"({"dropRole": "r"})");
  EXPECT_EQ(u.run("shop", J(R"({"find": "c"})")).code, 13);
  // A new password works for new connections; the old one no longer does.
  run_ok(R"({"updateUser": "u", "pwd": "new"})");
  EXPECT_TRUE(server_->login("u", "new").command("admin", J(R"({"ping": 1})")));
  EXPECT_FALSE(server_->login("u", "pw").run("admin", J(R"({"connectionStatus": 1})")).ok);
  // A dropped user's connections are no longer authenticated.
  run_ok(R"({"dropUser": "u"})");
  const auto r = u.run("shop", J(R"({"find": "c"})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(r.message, "command find requires authentication");
}

TEST_F(user_commands, a_user_may_view_itself_only) {
  server_->create_user("u", "pw", "[]");
  server_->create_user("v", "pw", R"([{"role": "read", "db": "shop"}])");
  auto u = server_->login("u", "pw");
  EXPECT_TRUE(u.command("admin", J(R"({"usersInfo": "u"})")));
  EXPECT_EQ(u.run("admin", J(R"({"usersInfo": "v"})")).code, 13);
  EXPECT_EQ(u.run("admin", J(R"({"usersInfo": 1})")).code, 13);
  auto v = server_->login("v", "pw");
  EXPECT_TRUE(v.command("admin", J(R"({"rolesInfo": {"role": "read", "db": "shop"}})")));
  EXPECT_EQ(v.run("admin", J(R"({"rolesInfo": {"role": "read", "db": "other"}})")).code, 13);
}

}  // namespace
}  // namespace mongo_emulator::test
