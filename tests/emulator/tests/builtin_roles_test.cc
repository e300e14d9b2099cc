// The built-in roles grant what MongoDB's documentation says each role grants.

#include "builtin_roles.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mongo_emulator {
namespace {

using rp = resource_pattern;

privilege_set role(std::string_view name, std::string_view db) {
  auto p = builtin_role_privileges(name, db);
  EXPECT_TRUE(p) << name << "@" << db;
  return p ? *p : privilege_set{};
}

TEST(builtin_roles, read_and_read_write_stay_in_their_database) {
  const auto read = role("read", "shop");
  EXPECT_TRUE(read.allows(rp::exact("shop", "orders"), actions_of({"find", "changeStream"})));
  EXPECT_TRUE(read.allows(rp::database("shop"), "listCollections"));
  EXPECT_FALSE(read.allows(rp::exact("shop", "orders"), "insert"));
  EXPECT_FALSE(read.allows(rp::exact("other", "orders"), "find"));
  const auto rw = role("readWrite", "shop");
  EXPECT_TRUE(rw.allows(rp::exact("shop", "orders"),
                        actions_of({"find", "insert", "update", "remove", "createIndex"})));
  EXPECT_FALSE(rw.allows(rp::database("shop"), "dropDatabase"));
  EXPECT_FALSE(rw.allows(rp::database("shop"), "createUser"));
}

TEST(builtin_roles, db_admin_user_admin_and_db_owner) {
  EXPECT_TRUE(role("dbAdmin", "shop").allows(rp::database("shop"), "dropDatabase"));
  EXPECT_FALSE(role("dbAdmin", "shop").allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(role("userAdmin", "shop")
                  .allows(rp::database("shop"), actions_of({"createUser", "grantRole"})));
  const auto owner = role("dbOwner", "shop");
  EXPECT_TRUE(owner.allows(rp::exact("shop", "orders"), actions_of({"find", "insert"})));
  EXPECT_TRUE(owner.allows(rp::database("shop"), actions_of({"dropDatabase", "createRole"})));
}

TEST(builtin_roles, any_database_roles_exist_in_admin_only) {
  EXPECT_FALSE(is_builtin_role("readAnyDatabase", "shop"));
  EXPECT_FALSE(is_builtin_role("root", "shop"));
  EXPECT_FALSE(is_builtin_role("read", "$external"));
  EXPECT_TRUE(is_builtin_role("read", "shop"));
  const auto any = role("readAnyDatabase", "admin");
  EXPECT_TRUE(any.allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(any.allows(rp::cluster(), "listDatabases"));
  EXPECT_FALSE(any.allows(rp::exact("local", "oplog.rs"), "find"));  // not local, not config
  EXPECT_FALSE(any.allows(rp::exact("shop", "orders"), "insert"));
  EXPECT_TRUE(role("readWriteAnyDatabase", "admin").allows(rp::exact("x", "y"), "remove"));
  const auto users = role("userAdminAnyDatabase", "admin");
  EXPECT_TRUE(users.allows(rp::database("local"), "grantRole"));
  EXPECT_TRUE(users.allows(rp::database("shop"), "createUser"));
}

TEST(builtin_roles, cluster_roles) {
  const auto monitor = role("clusterMonitor", "admin");
  EXPECT_TRUE(monitor.allows(rp::cluster(), actions_of({"serverStatus", "replSetGetStatus"})));
  EXPECT_TRUE(monitor.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_FALSE(monitor.allows(rp::cluster(), "replSetStateChange"));
  const auto admin = role("clusterAdmin", "admin");
  EXPECT_TRUE(admin.allows(rp::cluster(), actions_of({"replSetStateChange", "killAnySession"})));
  EXPECT_FALSE(admin.allows(rp::exact("shop", "orders"), "insert"));
}

TEST(builtin_roles, root_can_do_what_an_administrator_does) {
  const auto root = role("root", "admin");
  EXPECT_TRUE(root.allows(rp::exact("shop", "orders"), actions_of({"find", "insert", "update"})));
  EXPECT_TRUE(root.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_TRUE(root.allows(rp::cluster(), actions_of({"serverStatus", "replSetStateChange"})));
  EXPECT_TRUE(root.allows(rp::database("shop"), actions_of({"createUser", "createRole"})));
  EXPECT_FALSE(root.allows(rp::cluster(), "internal"));  // __system's, not root's
  EXPECT_TRUE(role("__system", "admin").allows(rp::cluster(), "internal"));
}

TEST(builtin_roles, names_per_database) {
  const auto shop = builtin_role_names("shop");
  EXPECT_EQ(shop, (std::vector<std::string>{"dbAdmin", "dbOwner", "enableSharding", "read",
                                            "readWrite", "userAdmin"}));
  const auto admin = builtin_role_names("admin");
  EXPECT_EQ(admin.size(), 19U);
  EXPECT_TRUE(std::is_sorted(admin.begin(), admin.end()));
  EXPECT_FALSE(builtin_role_privileges("nosuchrole", "admin"));
}

}  // namespace
}  // namespace mongo_emulator
