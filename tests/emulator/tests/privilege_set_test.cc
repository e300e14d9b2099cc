// MongoDB's privilege matching (ResourcePatternSearchList) and privilege documents.

#include "privilege_set.h"

#include <gtest/gtest.h>

#include "emulator_fixture.h"
#include "error_codes.h"

namespace mongo_emulator {
namespace {

using rp = resource_pattern;
using test::J;

privilege_set with(const bson::document& privilege_doc) {
  auto p = privilege::parse(privilege_doc);
  EXPECT_TRUE(p) << p.error().message;
  privilege_set s;
  if (p) s.add(*p);
  return s;
}

TEST(privilege_set, a_database_pattern_matches_its_normal_collections_only) {
  const auto s = with(J(R"({"resource": {"db": "shop", "collection": ""}, "actions": ["find"]})"));
  EXPECT_TRUE(s.allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(s.allows(rp::database("shop"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("shop", "orders"), "insert"));
  EXPECT_FALSE(s.allows(rp::exact("other", "orders"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("shop", "system.js"), "find"));
  EXPECT_FALSE(s.allows(rp::cluster(), "find"));
}

TEST(privilege_set, an_exact_pattern_matches_that_collection_only) {
  const auto s = with(
      J(R"({"resource": {"db": "shop", "collection": "orders"}, "actions": ["find", "update"]})"));
  EXPECT_TRUE(s.allows(rp::exact("shop", "orders"), actions_of({"find", "update"})));
  EXPECT_FALSE(s.allows(rp::exact("shop", "orders"), actions_of({"find", "insert"})));
  EXPECT_FALSE(s.allows(rp::exact("shop", "customers"), "find"));
  EXPECT_FALSE(s.allows(rp::database("shop"), "find"));
  EXPECT_TRUE(s.any_action_on(rp::exact("shop", "orders")));
  EXPECT_FALSE(s.any_action_on(rp::exact("shop", "customers")));
  EXPECT_TRUE(s.any_action_in_db("shop"));
  EXPECT_FALSE(s.any_action_in_db("other"));
}

TEST(privilege_set, any_normal_resource_skips_local_config_and_system_collections) {
  const auto s = with(J(R"({"resource": {"db": "", "collection": ""}, "actions": ["find"]})"));
  EXPECT_TRUE(s.allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(s.allows(rp::database("shop"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("config", "settings"), "find"));
  EXPECT_FALSE(s.allows(rp::database("local"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("shop", "system.users"), "find"));
  EXPECT_TRUE(s.allows(rp::any_normal(), "find"));
}

TEST(privilege_set, the_oplog_needs_its_own_privilege) {
  const auto s =
      with(J(R"({"resource": {"db": "local", "collection": "oplog.rs"}, "actions": ["find"]})"));
  EXPECT_TRUE(s.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("local", "startup_log"), "find"));
  // local.replset.* is not a normal collection: a database pattern on local misses it.
  const auto local =
      with(J(R"({"resource": {"db": "local", "collection": ""}, "actions": ["find"]})"));
  EXPECT_TRUE(local.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_FALSE(local.allows(rp::exact("local", "replset.election"), "find"));
}

TEST(privilege_set, a_collection_name_pattern_matches_it_in_every_database) {
  const auto s =
      with(J(R"({"resource": {"db": "", "collection": "orders"}, "actions": ["find"]})"));
  EXPECT_TRUE(s.allows(rp::exact("shop", "orders"), "find"));
  EXPECT_TRUE(s.allows(rp::exact("other", "orders"), "find"));
  EXPECT_TRUE(s.allows(rp::exact("local", "orders"), "find"));
  EXPECT_FALSE(s.allows(rp::exact("shop", "customers"), "find"));
}

TEST(privilege_set, cluster_and_any_resource) {
  const auto cluster = with(J(R"({"resource": {"cluster": true}, "actions": ["serverStatus"]})"));
  EXPECT_TRUE(cluster.allows(rp::cluster(), "serverStatus"));
  EXPECT_FALSE(cluster.allows(rp::database("admin"), "serverStatus"));
  const auto any = with(J(R"({"resource": {"anyResource": true}, "actions": ["find"]})"));
  EXPECT_TRUE(any.allows(rp::exact("local", "oplog.rs"), "find"));
  EXPECT_TRUE(any.allows(rp::exact("shop", "system.js"), "find"));
  EXPECT_TRUE(any.allows(rp::cluster(), "find"));
  EXPECT_FALSE(any.allows(rp::cluster(), "insert"));
  const auto all = with(J(R"({"resource": {"anyResource": true}, "actions": ["anyAction"]})"));
  EXPECT_TRUE(all.allows(rp::cluster(), actions_of({"shutdown", "insert"})));
}

TEST(privilege_set, privileges_merge_per_resource) {
  privilege_set s = with(J(R"({"resource": {"db": "a", "collection": "c"}, "actions": ["find"]})"));
  s.add(with(J(R"({"resource": {"db": "a", "collection": "c"}, "actions": ["insert"]})")));
  ASSERT_EQ(s.to_vector().size(), 1U);
  EXPECT_EQ(s.to_vector().front().to_document(),
            J(R"({"resource": {"db": "a", "collection": "c"}, "actions": ["find", "insert"]})"));
}

TEST(privilege_set, parse_refuses_unknown_actions_and_bad_resources) {
  auto unknown = privilege::parse(
      J(R"({"resource": {"db": "a", "collection": "c"}, "actions": ["find", "fnd"]})"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, codes::bad_value);
  EXPECT_EQ(unknown.error().message, "Unrecognized action privilege string: fnd");
  for (const char* bad : {R"({"resource": {"db": "a"}, "actions": []})",
                          R"({"resource": {"cluster": false}, "actions": []})",
                          R"({"resource": {"cluster": true, "db": "a"}, "actions": []})",
                          R"({"resource": {}, "actions": []})", R"({"actions": []})",
                          R"({"resource": {"db": "a", "collection": "c"}})"})
    EXPECT_FALSE(privilege::parse(J(bad))) << bad;
}

TEST(privilege_set, action_names_are_mongodbs) {
  EXPECT_TRUE(action_index("changeStream"));
  EXPECT_TRUE(action_index("replSetGetStatus"));
  EXPECT_FALSE(action_index("changestream"));
  for (std::size_t i = 0; i + 1 < action_count; ++i)
    EXPECT_LT(action_name(i), action_name(i + 1));  // sorted, so lookups work
}

}  // namespace
}  // namespace mongo_emulator
