// replSetStepDown: a forced step-down makes the node a secondary for the window (hello says so,
// writes get 10107 and primary reads 13435 with MongoDB's labels, open transactions are
// aborted, connections stay open), then it is primary again with its data and change history.
// Each test runs its own server, since the window affects every client of it.

#include <gtest/gtest.h>

#include <thread>

#include "emulator_fixture.h"
#include "own_server_test.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using denormd::test::emulator_process;

class step_down : public own_server_test {
 protected:
  void start(const std::vector<std::string>& args = {}) {
    own_server_test::start(args);
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(run(J(R"({"hello": 1, "$db": "admin"})")).contains("isWritablePrimary"));
  }

  static std::vector<std::string> labels(const bson::document& reply) {
    std::vector<std::string> out;
    if (const auto* l = reply.get("errorLabels"); l != nullptr && l->is_array()) {
      for (const auto& v : l->as_array())
        out.push_back(v.as_string());
    }
    return out;
  }

  static bson::document with_session(bson::document cmd, std::int64_t txn) {
    cmd.append("lsid", bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 7)}}});
    cmd.append("txnNumber", txn);
    return cmd;
  }
};

TEST_F(step_down, refuses_what_mongodb_refuses_on_a_one_node_set) {
  start();
  // Without force there is no electable secondary to hand over to.
  auto r = run(J(R"({"replSetStepDown": 60, "$db": "admin"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{262}));
  r = run(J(R"({"replSetStepDown": 5, "$db": "admin"})"));  // shorter than the 10 s catch-up
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{2}));
  r = run(J(R"({"replSetStepDown": -1, "force": true, "$db": "admin"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{2}));
  r = run(J(R"({"replSetStepDown": 60, "force": true, "$db": "db"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{13}));
  EXPECT_EQ(at(run(J(R"({"hello": 1, "$db": "admin"})")), "isWritablePrimary"), bson::value(true));
}

TEST_F(step_down, the_window_refuses_writes_and_primary_reads_then_serves_them_again) {
  start();
  run(J(R"({"insert": "c", "documents": [{"_id": 1}], "$db": "db"})"));
  const auto stream = run(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                "cursor": {}, "$db": "db"})"));
  const auto stream_id = at(stream, "cursor.id");
  auto r = run(J(R"({"replSetStepDown": 2, "force": true, "$db": "admin"})"));
  ASSERT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);

  // The same connection still works (MongoDB 4.2+ closes none), and hello says secondary.
  const auto hello = run(J(R"({"hello": 1, "$db": "admin"})"));
  EXPECT_EQ(at(hello, "isWritablePrimary"), bson::value(false));
  EXPECT_EQ(at(hello, "secondary"), bson::value(true));
  EXPECT_EQ(at(hello, "setName"), bson::value("rs0"));
  EXPECT_FALSE(hello.contains("primary"));
  EXPECT_FALSE(hello.contains("electionId"));
  EXPECT_EQ(at(hello, "hosts").as_array().size(), 1U);
  r = run(J(R"({"replSetStepDown": 60, "force": true, "$db": "admin"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));

  // A retryable write: 10107 with RetryableWriteError; a plain one: no label.
  r = run(with_session(J(R"({"insert": "c", "documents": [{"_id": 2}], "$db": "db"})"), 1));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));
  EXPECT_EQ(at(r, "errmsg"), bson::value("not primary"));
  EXPECT_EQ(labels(r), std::vector<std::string>{"RetryableWriteError"});
  r = run(J(R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"x": 1}}}], "$db": "db"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));
  EXPECT_TRUE(labels(r).empty());
  r = run(J(R"({"create": "d", "$db": "db"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));
  // Reads: primary (the default) 13435; a secondary-allowing read preference runs.
  r = run(J(R"({"find": "c", "$db": "db"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{13435}));
  r = run(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {},
                "$db": "db"})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{13435}));
  EXPECT_EQ(labels(r), std::vector<std::string>{"ResumableChangeStreamError"});
  r = run(J(R"({"find": "c", "$readPreference": {"mode": "primaryPreferred"}, "$db": "db"})"));
  EXPECT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);
  EXPECT_EQ(at(r, "cursor.firstBatch").as_array().size(), 1U);
  // An open change stream survives the step-down (MongoDB 6.0: reads are not killed).
  bson::document gm;
  gm.append("getMore", stream_id);
  gm.append("collection", "c");
  gm.append("maxTimeMS", std::int32_t{10});
  gm.append("$db", "db");
  r = run(gm);
  EXPECT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);
  // A write to the local database is allowed on a secondary.
  r = run(J(R"({"insert": "scratch", "documents": [{"_id": 1}], "$db": "local"})"));
  EXPECT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);

  std::this_thread::sleep_for(2200ms);
  EXPECT_EQ(at(run(J(R"({"hello": 1, "$db": "admin"})")), "isWritablePrimary"), bson::value(true));
  r = run(J(R"({"insert": "c", "documents": [{"_id": 3}], "$db": "db"})"));
  EXPECT_EQ(at(r, "n"), bson::value(std::int32_t{1})) << bson::to_json(r);
  // The data and the change history are kept: the stream sees the insert after the window.
  gm.set("maxTimeMS", std::int32_t{1000});
  r = run(gm);
  ASSERT_EQ(at(r, "cursor.nextBatch").as_array().size(), 1U) << bson::to_json(r);
  EXPECT_EQ(at(at(r, "cursor.nextBatch").as_array()[0].as_document(), "documentKey._id"),
            bson::value(std::int32_t{3}));
  r = run(J(R"({"count": "c", "$db": "db"})"));
  EXPECT_EQ(at(r, "n"), bson::value(std::int32_t{2}));
}

TEST_F(step_down, aborts_open_transactions) {
  start();
  run(J(R"({"insert": "c", "documents": [{"_id": 1}], "$db": "db"})"));
  auto stmt = with_session(J(R"({"insert": "c", "documents": [{"_id": 2}], "$db": "db"})"), 1);
  stmt.append("startTransaction", true);
  stmt.append("autocommit", false);
  ASSERT_EQ(at(run(stmt), "ok"), bson::value(1.0));
  ASSERT_EQ(at(run(J(R"({"replSetStepDown": 1, "force": true, "$db": "admin"})")), "ok"),
            bson::value(1.0));
  auto commit = with_session(J(R"({"commitTransaction": 1, "$db": "admin"})"), 1);
  commit.append("autocommit", false);
  // During the window: NotWritablePrimary, which a driver retries (RetryableWriteError).
  auto r = run(commit);
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));
  EXPECT_EQ(labels(r), std::vector<std::string>{"RetryableWriteError"});
  // A statement of a transaction: transient.
  auto next = with_session(J(R"({"insert": "c", "documents": [{"_id": 4}], "$db": "db"})"), 1);
  next.append("autocommit", false);
  r = run(next);
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{10107}));
  EXPECT_EQ(labels(r), std::vector<std::string>{"TransientTransactionError"});
  std::this_thread::sleep_for(1200ms);
  // After it: the transaction is gone (251, transient), and left nothing behind.
  r = run(commit);
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{251}));
  EXPECT_EQ(labels(r), std::vector<std::string>{"TransientTransactionError"});
  EXPECT_EQ(at(run(J(R"({"count": "c", "$db": "db"})")), "n"), bson::value(std::int32_t{1}));
}

TEST_F(step_down, an_unacknowledged_write_to_a_secondary_closes_the_connection) {
  start();
  ASSERT_EQ(at(run(J(R"({"replSetStepDown": 2, "force": true, "$db": "admin"})")), "ok"),
            bson::value(1.0));
  auto w0 = J(R"({"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 0},
                  "$db": "db"})");
  ASSERT_TRUE(client_->send(encode_op_msg(5, w0, 2)));  // moreToCome
  EXPECT_TRUE(client_->closed_by_peer(2s));
}

// mongod's internalChangeStreamRespectsReadPreference (MongoDB 8.x): a change stream opened with
// read preference primary dies at its next getMore on the stepped-down node, resumably.
TEST_F(step_down, with_the_read_preference_knob_a_primary_change_stream_is_killed) {
  start({"--setParameter", "internalChangeStreamRespectsReadPreference=true"});
  const auto stream = run(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                "cursor": {}, "$db": "db"})"));
  const auto other = run(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                               "cursor": {}, "$readPreference": {"mode": "primaryPreferred"},
                               "$db": "db"})"));
  ASSERT_EQ(at(run(J(R"({"replSetStepDown": 2, "force": true, "$db": "admin"})")), "ok"),
            bson::value(1.0));
  const auto get_more = [&](const bson::document& opened) {
    bson::document gm;
    gm.append("getMore", at(opened, "cursor.id"));
    gm.append("collection", "c");
    gm.append("maxTimeMS", std::int32_t{10});
    gm.append("$db", "db");
    return run(gm);
  };
  auto r = get_more(stream);
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{11602}));
  EXPECT_EQ(labels(r), std::vector<std::string>{"ResumableChangeStreamError"});
  EXPECT_EQ(at(get_more(stream), "code"), bson::value(std::int32_t{43}));  // killed
  EXPECT_EQ(at(get_more(other), "ok"), bson::value(1.0));
}

}  // namespace
}  // namespace mongo_emulator::test
