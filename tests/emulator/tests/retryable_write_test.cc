// Retryable writes: one (lsid.id, txnNumber) executes once; a retry gets the stored reply and
// records no second change event.

#include <gtest/gtest.h>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;

class retryable_writes : public emulator_test {
 protected:
  static bson::document with_session(bson::document cmd, std::uint8_t session, std::int64_t txn) {
    cmd.append("lsid",
               bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, session)}}});
    cmd.append("txnNumber", txn);
    return cmd;
  }
};

TEST_F(retryable_writes, a_retry_replays_the_stored_reply_without_a_second_event) {
  auto stream = open_stream("c");
  const auto insert_cmd =
      with_session(J(R"({"insert": "c", "documents": [{"_id": 1, "n": 0}]})"), 1, 5);
  const auto first = run_ok(insert_cmd);
  const auto again = run_ok(insert_cmd);  // no duplicate key: the stored result comes back
  EXPECT_EQ(at(first, "n"), at(again, "n"));
  EXPECT_FALSE(again.contains("writeErrors"));

  const auto inc = with_session(
      J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]})"), 1, 6);
  run_ok(inc);
  run_ok(inc);
  run_ok(inc);
  const auto doc = run_ok(J(R"({"find": "c"})"));
  EXPECT_EQ(at(batch(doc)[0].as_document(), "n"), bson::value(std::int32_t{1}));
  // Another session with the same txnNumber is a different write.
  run_ok(with_session(
      J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]})"), 2, 6));

  std::vector<std::string> types;
  auto cursor = stream;
  for (int i = 0; i < 5 && types.size() < 4; ++i) {
    auto more = get_more(cursor, 200);
    for (const auto& e : batch(more))
      types.push_back(at(e.as_document(), "operationType").as_string());
  }
  EXPECT_EQ(types, (std::vector<std::string>{"insert", "update", "update"}));
}

// libmongoc retries a write whose reply carries a retryable writeConcernError; the server
// answers the retry from its stored result, so the document is written once.
TEST_F(retryable_writes, libmongoc_retry_after_a_retryable_write_concern_error) {
  auto stream = watch("c");
  run_ok(J(R"({"configureFailPoint": "failCommand", "mode": {"times": 1},
               "data": {"failCommands": ["insert"],
                        "writeConcernError": {"code": 91, "errmsg": "Replication is being shut down"}}})"),
         "admin");
  auto coll = collection("c");
  auto doc = bson::to_bson(J(R"({"_id": 1})"));
  bson_error_t error;
  bson_t reply;
  const bool ok = mongoc_collection_insert_one(coll.get(), doc.get(), nullptr, &reply, &error);
  bson_destroy(&reply);
  EXPECT_TRUE(ok) << error.message;
  EXPECT_EQ(at(run_ok(J(R"({"count": "c"})")), "n"), bson::value(std::int32_t{1}));
  insert("c", R"([{"_id": 2}])");
  const auto events = denormd::test::next_events(stream.get(), 3, 2s);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "documentKey._id"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(events[1], "documentKey._id"), bson::value(std::int32_t{2}));
}

}  // namespace
}  // namespace mongo_emulator::test
