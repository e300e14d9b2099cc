// readConcern {level: "snapshot"} on find and aggregate outside transactions (MongoDB 5.0+): the
// server picks the read time and returns it as cursor.atClusterTime in the first reply; later
// getMores serve that snapshot. Also readConcern's validation (read_concern_args.cpp) and the
// atClusterTime a client may give.

#include <gtest/gtest.h>

#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

class snapshot_read : public emulator_test {
 protected:
  // Inserts `json_docs_array` with one insert command; its reply's operationTime.
  bson::timestamp write(std::string_view json_docs_array) {
    bson::document cmd{{"insert", std::string("c")}};
    cmd.append("documents", A(json_docs_array));
    const auto r = run_ok(cmd);
    EXPECT_TRUE(at(r, "operationTime").is<bson::timestamp>()) << bson::to_json(r);
    return at(r, "operationTime").is<bson::timestamp>()
               ? at(r, "operationTime").as<bson::timestamp>()
               : bson::timestamp{};
  }
  static bson::value at_cluster_time(const bson::document& reply) {
    return at(reply, "cursor.atClusterTime");
  }
  static std::vector<std::int32_t> ids(const bson::document& reply) {
    std::vector<std::int32_t> out;
    for (const auto& d : batch(reply))
      out.push_back(at(d.as_document(), "_id").as<std::int32_t>());
    return out;
  }
};

TEST_F(snapshot_read, find_returns_the_time_of_the_last_write_and_keeps_its_snapshot) {
  write(R"([{"_id": 1}])");
  const bson::timestamp last = write(R"([{"_id": 2}, {"_id": 3}])");
  const auto first = run_ok(J(R"({"find": "c", "sort": {"_id": 1}, "batchSize": 1,
                                   "readConcern": {"level": "snapshot"}})"));
  EXPECT_EQ(at_cluster_time(first), bson::value(last)) << bson::to_json(first);
  EXPECT_EQ(ids(first), std::vector<std::int32_t>{1});
  // A write after the read is not in the snapshot, and later reads see it at a later time.
  const bson::timestamp later = write(R"([{"_id": 0}, {"_id": 4}])");
  EXPECT_GT(later, last);
  const auto rest = get_more(first);
  EXPECT_EQ(ids(rest), (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(at_cluster_time(first), bson::value(last));
  const auto again = run_ok(J(R"({"find": "c", "readConcern": {"level": "snapshot"}})"));
  EXPECT_EQ(at_cluster_time(again), bson::value(later)) << bson::to_json(again);
  EXPECT_EQ(batch(again).size(), 5U);
  // Without snapshot there is no atClusterTime.
  const auto plain = run_ok(J(R"({"find": "c", "readConcern": {"level": "local"}})"));
  EXPECT_TRUE(at_cluster_time(plain).is_null()) << bson::to_json(plain);
}

TEST_F(snapshot_read, aggregate_returns_the_time_of_the_last_write_and_keeps_its_snapshot) {
  const bson::timestamp last = write(R"([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])");
  const auto first = run_ok(J(R"({"aggregate": "c", "pipeline": [{"$sort": {"_id": 1}}],
                                   "cursor": {"batchSize": 1},
                                   "readConcern": {"level": "snapshot"}})"));
  EXPECT_EQ(at_cluster_time(first), bson::value(last)) << bson::to_json(first);
  const bson::timestamp later = write(R"([{"_id": 3}])");
  EXPECT_GT(later, last);
  EXPECT_EQ(ids(get_more(first)), std::vector<std::int32_t>{2});
  // A client's atClusterTime equal to the current time reads at it.
  bson::document cmd{{"aggregate", std::string("c")}};
  cmd.append("pipeline", bson::array{});
  cmd.append("cursor", bson::document{});
  cmd.append("readConcern",
             bson::document{{"level", std::string("snapshot")}, {"atClusterTime", later}});
  const auto r = run_ok(cmd);
  EXPECT_EQ(at_cluster_time(r), bson::value(later)) << bson::to_json(r);
  EXPECT_EQ(batch(r).size(), 3U);
}

TEST_F(snapshot_read, at_cluster_time_in_the_future_fails_and_in_the_past_is_refused) {
  const bson::timestamp now = write(R"([{"_id": 1}])");
  bson::document future{{"find", std::string("c")}};
  future.append("readConcern", bson::document{{"level", std::string("snapshot")},
                                              {"atClusterTime", bson::timestamp{now.t + 1000, 1}}});
  const auto r = run_fail(future, 72);
  EXPECT_NE(
      at(r, "errmsg")
          .as_string()
          .find("readConcern atClusterTime value must not be greater than the current clusterTime"),
      std::string::npos)
      << bson::to_json(r);
  if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "MongoDB keeps history";
  bson::document past{{"find", std::string("c")}};
  past.append("readConcern", bson::document{{"level", std::string("snapshot")},
                                            {"atClusterTime", bson::timestamp{now.t, 0}}});
  const auto refused = run_fail(past, 238);
  EXPECT_NE(at(refused, "errmsg").as_string().find("atClusterTime"), std::string::npos)
      << bson::to_json(refused);
}

TEST_F(snapshot_read, read_concern_is_validated) {
  auto rf = [&](std::string_view json, int code, std::string_view message = {}) {
    SCOPED_TRACE(json);
    const auto r = run_fail(J(json), code);
    if (!message.empty()) {
      EXPECT_EQ(at(r, "errmsg").as_string(), message) << bson::to_json(r);
    }
  };
  rf(R"({"find": "c", "readConcern": {"level": "snap"}})", 9,
     "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or "
     "'snapshot'");
  rf(R"({"find": "c", "readConcern": {"level": 1}})", 14);
  rf(R"({"find": "c", "readConcern": {"level": "local", "x": 1}})", 72,
     "Unrecognized option in readConcern: x");
  rf(R"({"find": "c", "readConcern": {"level": "local",
                                       "atClusterTime": {"$timestamp": {"t": 1, "i": 1}}}})",
     72, "atClusterTime field can be set only if level is equal to snapshot");
  rf(R"({"find": "c", "readConcern": {"level": "snapshot",
                                       "atClusterTime": {"$timestamp": {"t": 0, "i": 0}}}})",
     72, "atClusterTime cannot be a null timestamp");
  rf(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {},
          "readConcern": {"level": "snapshot"}})",
     72,
     "Aggregation stage $changeStream cannot run with a readConcern other than 'majority'. "
     "Current readConcern: snapshot");
  run_ok(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {},
               "readConcern": {"level": "majority"}})"));
}

}  // namespace
}  // namespace mongo_emulator::test
