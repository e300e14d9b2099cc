// failCommand as MongoDB implements it: modes, error codes and labels, closeConnection,
// blockConnection, writeConcernError, appName, and the labels the server adds itself.

#include <gtest/gtest.h>

#include <chrono>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

class fail_points : public emulator_test {
 protected:
  void configure(std::string_view json) {
    bson::document cmd{{"configureFailPoint", "failCommand"}};
    for (auto& f : J(json))
      cmd.append(f.name, f.val);
    run_ok(cmd, "admin");
  }
  command_reply ping_db() { return run(J(R"({"count": "c"})")); }
};

TEST_F(fail_points, times_fails_n_commands_then_turns_off) {
  configure(R"({"mode": {"times": 2}, "data": {"failCommands": ["count"], "errorCode": 2}})");
  auto r = ping_db();
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(at(r.reply, "errmsg"), bson::value("Failing command via 'failCommand' failpoint"));
  EXPECT_EQ(at(r.reply, "codeName"), bson::value("BadValue"));
  EXPECT_EQ(ping_db().code, 2);
  EXPECT_TRUE(ping_db().ok);
}

TEST_F(fail_points, always_on_until_off) {
  configure(R"({"mode": "alwaysOn", "data": {"failCommands": ["count"], "errorCode": 91}})");
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(ping_db().code, 91);
  // Commands not listed run normally, hello and ping included.
  run_ok(J(R"({"ping": 1})"), "admin");
  run_ok(J(R"({"hello": 1})"), "admin");
  const auto off = run_ok(J(R"({"configureFailPoint": "failCommand", "mode": "off"})"), "admin");
  EXPECT_EQ(at(off, "count"), bson::value(std::int64_t{5}));
  EXPECT_TRUE(ping_db().ok);
}

TEST_F(fail_points, skip_lets_the_first_n_through) {
  configure(R"({"mode": {"skip": 2}, "data": {"failCommands": ["count"], "errorCode": 2}})");
  EXPECT_TRUE(ping_db().ok);
  EXPECT_TRUE(ping_db().ok);
  EXPECT_EQ(ping_db().code, 2);
  EXPECT_EQ(ping_db().code, 2);
}

TEST_F(fail_points, activation_probability_zero_and_one) {
  configure(R"({"mode": {"activationProbability": 0.0},
                "data": {"failCommands": ["count"], "errorCode": 2}})");
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(ping_db().ok);
  configure(R"({"mode": {"activationProbability": 1.0},
                "data": {"failCommands": ["count"], "errorCode": 2}})");
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(ping_db().code, 2);
}

TEST_F(fail_points, listed_hello_and_ping_fail_too) {
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["ping"], "errorCode": 8}})");
  EXPECT_EQ(run(J(R"({"ping": 1})"), "admin").code, 8);
  EXPECT_TRUE(run(J(R"({"ping": 1})"), "admin").ok);
}

TEST_F(fail_points, error_labels_given_replace_the_computed_ones) {
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["count"], "errorCode": 2,
                "errorLabels": ["Custom"]}})");
  EXPECT_EQ(at(ping_db().reply, "errorLabels"), bson::value(A(R"(["Custom"])")));
}

TEST_F(fail_points, close_connection_drops_the_socket) {
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["count"],
                "closeConnection": true}})");
  const auto r = ping_db();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.reply.empty());  // a network error, not a server reply
  EXPECT_TRUE(ping_db().ok);     // the driver reconnects
}

TEST_F(fail_points, block_connection_delays_the_reply) {
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["count"],
                "blockConnection": true, "blockTimeMS": 300}})");
  const auto start = steady::now();
  EXPECT_TRUE(ping_db().ok);
  const auto elapsed = steady::now() - start;
  EXPECT_GE(elapsed, 280ms);
  EXPECT_LT(elapsed, 2s);
}

TEST_F(fail_points, write_concern_error_is_added_after_the_write) {
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["insert"],
                "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}}})");
  const auto r = run(J(R"({"insert": "c", "documents": [{"_id": 1}]})"));
  EXPECT_EQ(at(r.reply, "writeConcernError.code"), bson::value(std::int32_t{64}));
  EXPECT_EQ(at(r.reply, "n"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(run_ok(J(R"({"count": "c"})")), "n"), bson::value(std::int32_t{1}));
}

TEST_F(fail_points, app_name_restricts_the_targets) {
  configure(R"({"mode": "alwaysOn", "data": {"failCommands": ["count"], "errorCode": 2,
                "appName": "someone-else"}})");
  EXPECT_TRUE(ping_db().ok);
  auto other = test_client::connect(uri(), "someone-else");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->run(db(), J(R"({"count": "c"})")).code, 2);
}

TEST_F(fail_points, namespace_restricts_the_targets) {
  configure(R"({"mode": "alwaysOn", "data": {"failCommands": ["find"], "errorCode": 13,
                "namespace": "local.oplog.rs"}})");
  EXPECT_TRUE(run(J(R"({"find": "c"})")).ok);
  EXPECT_EQ(run(J(R"({"find": "oplog.rs"})"), "local").code, 13);
}

TEST_F(fail_points, retryable_write_errors_get_the_retryable_label) {
  // With a txnNumber (a retryable write) a retryable code gets RetryableWriteError...
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["insert"], "errorCode": 91}})");
  auto cmd = J(R"({"insert": "c", "documents": [{"_id": 1}], "txnNumber": {"$numberLong": "1"}})");
  cmd.append("lsid", bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 7)}}});
  auto r = run(cmd);
  EXPECT_EQ(r.code, 91);
  EXPECT_EQ(at(r.reply, "errorLabels"), bson::value(A(R"(["RetryableWriteError"])")));
  // ...a non-retryable code does not...
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["insert"], "errorCode": 2}})");
  r = run(cmd);
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(r.reply.contains("errorLabels"));
  // ...and neither does a write outside a retryable context.
  configure(R"({"mode": {"times": 1}, "data": {"failCommands": ["delete"], "errorCode": 91}})");
  r = run(J(R"({"delete": "c", "deletes": [{"q": {}, "limit": 0}]})"));
  EXPECT_EQ(r.code, 91);
  EXPECT_FALSE(r.reply.contains("errorLabels"));
}

TEST_F(fail_points, configure_fail_point_requires_admin_and_known_names) {
  run_fail(J(R"({"configureFailPoint": "failCommand", "mode": "off"})"), 13);
  run_fail(J(R"({"configureFailPoint": "noSuchFailPoint", "mode": "off"})"), 2, "admin");
}

}  // namespace
}  // namespace mongo_emulator::test
