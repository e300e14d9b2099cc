#include "mongo/driver_error.h"

#include <gtest/gtest.h>

namespace denormd::mongo {
namespace {

driver_error server(std::uint32_t code, std::vector<std::string> labels = {}) {
  return driver_error{driver_error::origin::server, code, "m", std::move(labels)};
}

TEST(driver_error_test, classifies_what_to_retry) {
  EXPECT_TRUE((driver_error{driver_error::origin::network, 0, "socket", {}}).transient());
  for (std::uint32_t code : {6u, 7u, 89u, 91u, 189u, 10107u, 11600u, 11602u, 13435u, 13436u}) {
    EXPECT_TRUE(server(code).transient()) << code;
  }
  EXPECT_TRUE(server(12345, {"RetryableWriteError"}).transient());
  EXPECT_FALSE(server(17419).transient());  // document too large: a dead letter, not a retry
  EXPECT_FALSE(server(121).transient());    // validation
  EXPECT_FALSE(server(13).transient());     // unauthorized
  EXPECT_FALSE((driver_error{driver_error::origin::client, 6, "invalid", {}}).transient());
}

TEST(driver_error_test, recognizes_lost_history) {
  EXPECT_TRUE(server(286, {"NonResumableChangeStreamError"}).history_lost());
  EXPECT_TRUE(server(280).history_lost());
  EXPECT_TRUE(server(260).history_lost());
  EXPECT_FALSE(server(43).history_lost());
  EXPECT_FALSE((driver_error{driver_error::origin::client, 286, "", {}}).history_lost());
}

TEST(driver_error_test, describes_itself_for_logs_and_metrics) {
  EXPECT_EQ(server(11000).metric_code(), "11000");
  EXPECT_EQ((driver_error{driver_error::origin::network, 0, "x", {}}).metric_code(), "network");
  EXPECT_EQ(server(91, {"RetryableWriteError"}).to_string(), "m (code 91) [RetryableWriteError]");
}

driver_error refused(std::string message) {
  return driver_error{driver_error::origin::server, unauthorized_code, std::move(message), {}};
}

TEST(driver_error_test, classifies_refused_credentials_and_privileges) {
  EXPECT_TRUE(server(18).authentication_failed());
  EXPECT_FALSE(server(18).unauthorized());
  EXPECT_FALSE((driver_error{driver_error::origin::client, 18, "x", {}}).authentication_failed());
  EXPECT_TRUE(server(13).unauthorized());
  EXPECT_FALSE(server(13).authentication_failed());
  EXPECT_FALSE(server(18).transient());
  EXPECT_EQ(server(18).metric_code(), "18");
}

// MongoDB's message (commands.cpp: "not authorized on DB to execute command " and the request
// body as BSONObj::toString prints it) names the command, not the action: the privilege is
// the one that command needs.
TEST(driver_error_test, names_the_privilege_a_refused_command_needs) {
  const auto needs = [](const std::string& m) { return refused(m).needed_privilege(); };
  EXPECT_EQ(needs("not authorized on shop to execute command { update: \"orders\", ordered: "
                  "true, updates: [ { q: { customerId: 7 }, u: { $set: { customer.name: \"A\" } "
                  "}, multi: true } ], $db: \"shop\" }"),
            "update on shop.orders");
  EXPECT_EQ(needs("not authorized on shop to execute command { update: \"denormd_checkpoints\", "
                  "updates: [ { q: { _id: \"shop.orders\" }, u: {}, upsert: true } ] }"),
            "update and insert on shop.denormd_checkpoints");
  EXPECT_EQ(needs("not authorized on shop to execute command { aggregate: \"hosts\", pipeline: [ "
                  "{ $changeStream: { fullDocument: \"updateLookup\" } } ], cursor: {} }"),
            "changeStream and find on shop.hosts");
  EXPECT_EQ(needs("not authorized on shop to execute command { aggregate: \"reviews\", pipeline: "
                  "[ { $match: {} }, { $group: { _id: \"$productId\" } } ] }"),
            "find on shop.reviews");
  EXPECT_EQ(needs("not authorized on shop to execute command { listCollections: 1, filter: { "
                  "name: \"orders\" }, $db: \"shop\" }"),
            "listCollections on the database shop");
  EXPECT_EQ(needs("not authorized on shop to execute command { aggregate: 1, pipeline: [ { "
                  "$changeStream: {} } ] }"),
            "changeStream and find on the database shop");
  EXPECT_EQ(needs("not authorized on local to execute command { find: \"oplog.rs\" }"),
            "find on local.oplog.rs");
  EXPECT_EQ(needs("not authorized on shop to execute command { delete: \"a\\\"b\", deletes: [] }"),
            "remove on shop.a\"b");
  // What it cannot name: nothing, and the message as it is.
  EXPECT_EQ(needs("command find requires authentication"), "");
  EXPECT_EQ(needs("not authorized on shop to execute command { getMore: 42, collection: \"c\" }"),
            "");
  EXPECT_EQ(server(11000).needed_privilege(), "");
}

TEST(driver_error_test, a_refused_command_is_described_by_its_privilege_and_clipped) {
  std::string echo = "not authorized on shop to execute command { update: \"orders\", updates: [ ";
  while (echo.size() < 5000)
    echo += "{ q: { _id: 1 }, u: { $set: { customer.name: \"Zo\xc3\xab\" } } }, ";
  const std::string s = refused(echo).to_string();
  EXPECT_EQ(s.rfind("the user's roles do not grant update on shop.orders: not authorized on shop "
                    "to execute command { update: \"orders\"",
                    0),
            0U)
      << s;
  EXPECT_LT(s.size(), 400U);
  EXPECT_NE(s.find("... (code 13)"), std::string::npos) << s;
  const std::string unknown = refused("command find requires authentication").to_string();
  EXPECT_EQ(unknown, "command find requires authentication (code 13)");
}

}  // namespace
}  // namespace denormd::mongo
