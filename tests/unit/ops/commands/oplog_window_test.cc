#include "ops/commands/oplog_window.h"

#include <gtest/gtest.h>

#include "../oplog_client.h"

namespace denormd::ops {
namespace {

using testing::oplog_client;

TEST(ops_oplog_window_test, headroom_is_the_seconds_from_the_oldest_entry_to_the_position) {
  EXPECT_EQ(headroom_seconds({1700011520, 4}, {1700000000, 9}), 11520);  // 3h12m
  EXPECT_EQ(headroom_seconds({1700000000, 9}, {1700000000, 1}), 0);
  // History already gone: the oldest kept entry is past the position.
  EXPECT_EQ(headroom_seconds({1700000000, 1}, {1700000125, 1}), -125);
  EXPECT_EQ(headroom_seconds({0, 0}, {4294967295U, 0}), -4294967295.0);
}

TEST(ops_oplog_window_test, reads_the_oldest_entry_as_rs_print_replication_info_does) {
  oplog_client client;
  client.keep(bson::timestamp{1700000000, 7});
  auto oldest = oldest_oplog_entry(client);
  ASSERT_TRUE(oldest) << oldest.error().to_string();
  EXPECT_EQ(*oldest, (bson::timestamp{1700000000, 7}));
  const auto last = client.last();
  EXPECT_EQ(last.ns, "local.oplog.rs");
  EXPECT_EQ(last.filter, bson::document{});
  EXPECT_EQ(last.sort, (bson::document{{"$natural", 1}}));
  EXPECT_EQ(last.projection, (bson::document{{"ts", 1}}));
  EXPECT_EQ(last.limit, 1);
}

TEST(ops_oplog_window_test, an_empty_oplog_has_no_oldest_entry_and_a_refusal_is_an_error) {
  oplog_client client;
  client.keep(std::nullopt);
  auto none = oldest_oplog_entry(client);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  client.refuse(testing::unauthorized());
  auto refused = oldest_oplog_entry(client);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 13U);
}

TEST(ops_oplog_window_test, a_refused_read_names_the_privilege_to_grant) {
  const std::string problem = oplog_read_problem(testing::unauthorized());
  EXPECT_NE(problem.find("lacks the find privilege on local.oplog.rs"), std::string::npos)
      << problem;
  EXPECT_NE(problem.find("not authorized on local"), std::string::npos) << problem;
  const std::string other = oplog_read_problem(
      mongo::driver_error{mongo::driver_error::origin::network, 0, "connection refused", {}});
  EXPECT_EQ(other.find("privilege"), std::string::npos) << other;
  EXPECT_NE(other.find("connection refused"), std::string::npos) << other;
}

}  // namespace
}  // namespace denormd::ops
