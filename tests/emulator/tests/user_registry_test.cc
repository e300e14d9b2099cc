// Users and roles: uniqueness, role inheritance, dropRole's cascade, cycles, the localhost
// exception's emptiness test.

#include "user_registry.h"

#include <gtest/gtest.h>

#include "emulator_fixture.h"
#include "error_codes.h"

namespace mongo_emulator {
namespace {

using rp = resource_pattern;

user_record user(std::string name, std::vector<role_name> roles) {
  return user_record{user_name{std::move(name), "admin"}, {}, {}, std::move(roles), {}};
}

role_record role(std::string name, std::vector<privilege> privileges,
                 std::vector<role_name> roles) {
  return role_record{role_name{std::move(name), "admin"}, std::move(privileges), std::move(roles)};
}

privilege find_on(std::string db, std::string coll) {
  return privilege{rp::exact(std::move(db), std::move(coll)), actions_of({"find"})};
}

TEST(user_registry, users_are_unique_per_database) {
  user_registry r;
  EXPECT_TRUE(r.empty());
  ASSERT_TRUE(r.add_user(user("u", {})));
  EXPECT_FALSE(r.empty());
  auto again = r.add_user(user("u", {}));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, 51003);
  EXPECT_EQ(again.error().message, "User \"u@admin\" already exists");
  user_record other = user("u", {});
  other.name.db = "shop";
  EXPECT_TRUE(r.add_user(other));
  EXPECT_EQ(r.users(std::nullopt).size(), 2U);
  EXPECT_EQ(r.users(std::string("shop")).size(), 1U);
  auto missing = r.remove_user(user_name{"nobody", "admin"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, codes::user_not_found);
}

TEST(user_registry, a_role_alone_ends_the_localhost_exception) {
  user_registry r;
  ASSERT_TRUE(r.add_role(role("r", {}, {})));
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.add_role(role("r", {}, {})).error().code, 51002);
}

TEST(user_registry, roles_inherit_privileges_and_builtin_roles) {
  user_registry r;
  ASSERT_TRUE(r.add_role(role("base", {find_on("shop", "orders")}, {{"read", "reports"}})));
  ASSERT_TRUE(r.add_role(role("top", {find_on("shop", "customers")}, {{"base", "admin"}})));
  const auto resolved = r.resolve({{"top", "admin"}});
  EXPECT_EQ(resolved.roles,
            (std::set<role_name>{{"top", "admin"}, {"base", "admin"}, {"read", "reports"}}));
  EXPECT_TRUE(resolved.privileges.allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(resolved.privileges.allows(rp::exact("shop", "customers"), "find"));
  EXPECT_TRUE(resolved.privileges.allows(rp::exact("reports", "daily"), "find"));
  EXPECT_FALSE(resolved.privileges.allows(rp::exact("shop", "products"), "find"));
  EXPECT_TRUE(r.would_cycle({"base", "admin"}, {{"top", "admin"}}));
  EXPECT_FALSE(r.would_cycle({"top", "admin"}, {{"read", "shop"}}));
}

TEST(user_registry, dropping_a_role_takes_it_from_users_and_roles) {
  user_registry r;
  ASSERT_TRUE(r.add_role(role("base", {find_on("shop", "orders")}, {})));
  ASSERT_TRUE(r.add_role(role("top", {}, {{"base", "admin"}})));
  ASSERT_TRUE(r.add_user(user("u", {{"base", "admin"}, {"read", "shop"}})));
  const auto before = r.generation();
  ASSERT_TRUE(r.remove_role({"base", "admin"}));
  EXPECT_NE(r.generation(), before);
  EXPECT_EQ(r.user({"u", "admin"})->roles, (std::vector<role_name>{{"read", "shop"}}));
  EXPECT_TRUE(r.role({"top", "admin"})->roles.empty());
  EXPECT_EQ(r.remove_role({"base", "admin"}).error().code, codes::role_not_found);
}

TEST(user_registry, role_names_parse_as_mongodb_reads_them) {
  auto names = parse_role_names(
      test::J(R"({"r": ["read", {"role": "readWrite", "db": "shop"}]})").get("r")->as_array(),
      "admin");
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<role_name>{{"read", "admin"}, {"readWrite", "shop"}}));
  EXPECT_FALSE(parse_role_names(bson::value("read"), "admin"));
  EXPECT_FALSE(parse_role_names(test::A(R"([{"role": "read"}])"), "admin"));
  user_registry r;
  auto missing = check_roles_exist(r, {{"read", "shop"}, {"nosuch", "admin"}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, codes::role_not_found);
  EXPECT_EQ(missing.error().message, "Could not find role: nosuch@admin");
}

}  // namespace
}  // namespace mongo_emulator
