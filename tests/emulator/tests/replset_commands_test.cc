// replSetGetStatus, replSetGetConfig (and local.system.replset) and replSetResizeOplog with
// MongoDB 6.0's field names and BSON types, reflecting the node's real state: its role, its
// newest oplog entry, the history's bound, which collStats and listCollections report.
// The shared-server tests also hold against a real replica set (DENORMD_TEST_URI).

#include <gtest/gtest.h>

#include <thread>

#include "emulator_fixture.h"
#include "own_server_test.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using denormd::test::emulator_process;

class replset_commands : public emulator_test {
 protected:
  bson::document newest_oplog_entry() {
    const auto r = run_ok(J(R"({"find": "oplog.rs", "filter": {}, "sort": {"$natural": -1},
                                "limit": 1})"),
                          "local");
    EXPECT_EQ(batch(r).size(), 1U);
    return batch(r).empty() ? bson::document{} : batch(r)[0].as_document();
  }
};

TEST_F(replset_commands, status_describes_this_primary_and_its_newest_entry) {
  const auto wrote = run_ok(J(R"({"insert": "c", "documents": [{"_id": 1}]})"));
  // A change stream opened now advances the cluster time past the newest entry (the
  // emulator's clock tick; MongoDB's no-op writer): the optime must still be the entry's.
  run_ok(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})"));
  const auto hello = run_ok(J(R"({"hello": 1})"), "admin");
  const auto s = run_ok(J(R"({"replSetGetStatus": 1})"), "admin");
  EXPECT_EQ(at(s, "set"), at(hello, "setName"));
  EXPECT_TRUE(at(s, "date").is<bson::date_time>());
  EXPECT_EQ(at(s, "myState"), bson::value(std::int32_t{1}));
  EXPECT_TRUE(at(s, "term").is<std::int64_t>());
  EXPECT_TRUE(at(s, "heartbeatIntervalMillis").is<std::int64_t>());
  EXPECT_EQ(at(s, "majorityVoteCount"), bson::value(std::int32_t{1}));
  ASSERT_TRUE(at(s, "members").is_array());
  ASSERT_EQ(at(s, "members").as_array().size(), 1U);
  const auto& me = at(s, "members").as_array()[0].as_document();
  EXPECT_EQ(at(me, "_id"), bson::value(std::int32_t{0}));
  EXPECT_EQ(at(me, "name"), at(hello, "me"));
  EXPECT_EQ(at(me, "health"), bson::value(1.0));
  EXPECT_EQ(at(me, "state"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(me, "stateStr"), bson::value("PRIMARY"));
  EXPECT_TRUE(at(me, "uptime").is<std::int32_t>());
  EXPECT_EQ(at(me, "self"), bson::value(true));
  EXPECT_TRUE(at(me, "electionTime").is<bson::timestamp>());
  EXPECT_TRUE(at(me, "electionDate").is<bson::date_time>());
  EXPECT_EQ(at(me, "configVersion"), at(hello, "setVersion"));
  // The optime is the newest oplog entry's: at least this test's insert.
  const auto& ts = at(me, "optime.ts");
  ASSERT_TRUE(ts.is<bson::timestamp>());
  EXPECT_TRUE(at(me, "optime.t").is<std::int64_t>());
  EXPECT_GE(ts.as<bson::timestamp>(), at(wrote, "operationTime").as<bson::timestamp>());
  EXPECT_EQ(at(me, "optimeDate"),
            bson::value(bson::date_time{std::int64_t{ts.as<bson::timestamp>().t} * 1000}));
  EXPECT_EQ(at(s, "optimes.appliedOpTime.ts"), ts);
  if (denormd::test::emulator_only_available()) {  // no no-op writer races it here
    const auto newest = newest_oplog_entry();
    EXPECT_EQ(ts, at(newest, "ts"));
    EXPECT_EQ(at(me, "lastAppliedWallTime"), at(newest, "wall"));
    EXPECT_LT(ts.as<bson::timestamp>(), at(s, "operationTime").as<bson::timestamp>());
  }
  EXPECT_EQ(run_fail(J(R"({"replSetGetStatus": 1})"), 13).get("codeName")->as_string(),
            "Unauthorized");
}

TEST_F(replset_commands, config_agrees_with_hello_and_local_system_replset) {
  const auto hello = run_ok(J(R"({"hello": 1})"), "admin");
  const auto reply = run_ok(J(R"({"replSetGetConfig": 1})"), "admin");
  ASSERT_TRUE(at(reply, "config").is_document());
  const auto& config = at(reply, "config").as_document();
  EXPECT_EQ(at(config, "_id"), at(hello, "setName"));
  EXPECT_EQ(at(config, "version"), at(hello, "setVersion"));
  EXPECT_TRUE(at(config, "protocolVersion").is<std::int64_t>());
  EXPECT_EQ(at(config, "writeConcernMajorityJournalDefault"), bson::value(true));
  EXPECT_TRUE(at(config, "settings.replicaSetId").is<bson::oid>());
  EXPECT_EQ(at(config, "settings.getLastErrorDefaults"),
            bson::value(J(R"({"w": 1, "wtimeout": 0})")));
  ASSERT_TRUE(at(config, "members").is_array());
  std::vector<bson::value> hosts;
  for (const auto& m : at(config, "members").as_array()) {
    hosts.push_back(at(m.as_document(), "host"));
    EXPECT_TRUE(at(m.as_document(), "_id").is<std::int32_t>());
    EXPECT_TRUE(at(m.as_document(), "priority").is<double>());
    EXPECT_TRUE(at(m.as_document(), "votes").is<std::int32_t>());
    EXPECT_TRUE(at(m.as_document(), "secondaryDelaySecs").is<std::int64_t>());
  }
  EXPECT_EQ(hosts, at(hello, "hosts").as_array());
  // rs.conf()'s fallback and printSecondaryReplicationInfo()'s check read the same document.
  const auto stored = run_ok(J(R"({"find": "system.replset", "filter": {}})"), "local");
  ASSERT_EQ(batch(stored).size(), 1U);
  EXPECT_EQ(batch(stored)[0], bson::value(config));
  const auto counted = run_ok(J(R"({"aggregate": "system.replset", "pipeline": [{"$match": {}},
                                    {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}})"),
                              "local");
  ASSERT_EQ(batch(counted).size(), 1U);
  EXPECT_EQ(at(batch(counted)[0].as_document(), "n"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(run_ok(J(R"({"count": "system.replset"})"), "local"), "n"),
            bson::value(std::int32_t{1}));
  const auto committed = run_ok(J(R"({"replSetGetConfig": 1, "commitmentStatus": true})"), "admin");
  EXPECT_EQ(at(committed, "commitmentStatus"), bson::value(true));
  run_fail(J(R"({"replSetGetConfig": 1})"), 13);
}

// getReplicationInfo() lists local's collections before it reads the oplog.
TEST_F(replset_commands, local_lists_its_oplog_and_configuration) {
  insert("c", R"([{"_id": 1}])");
  const auto r = run_ok(J(R"({"listCollections": 1, "filter": {}})"), "local");
  const bson::document* oplog = nullptr;
  bool replset = false;
  for (const auto& c : batch(r)) {
    const auto& name = at(c.as_document(), "name");
    if (name == bson::value("oplog.rs")) oplog = &c.as_document();
    if (name == bson::value("system.replset")) replset = true;
  }
  ASSERT_NE(oplog, nullptr) << bson::to_json(r);
  EXPECT_TRUE(replset);
  EXPECT_EQ(at(*oplog, "options.capped"), bson::value(true));
  ASSERT_TRUE(at(*oplog, "options.size").is_number());
  EXPECT_TRUE(at(*oplog, "info.uuid").is<bson::binary>());
  // collStats reports the same bound, and the kept entries.
  const auto stats = run_ok(J(R"({"collStats": "oplog.rs"})"), "local");
  EXPECT_EQ(at(stats, "ns"), bson::value("local.oplog.rs"));
  EXPECT_EQ(at(stats, "capped"), bson::value(true));
  EXPECT_EQ(at(stats, "maxSize").to_double(), at(*oplog, "options.size").to_double());
  EXPECT_GE(at(stats, "count").to_double(), 2);  // at least the create and the insert
  EXPECT_GT(at(stats, "size").to_double(), 0);
  const auto names = run_ok(J(R"({"listCollections": 1, "nameOnly": true,
                                  "filter": {"name": "oplog.rs"}})"),
                            "local");
  ASSERT_EQ(batch(names).size(), 1U);
  EXPECT_EQ(batch(names)[0], bson::value(J(R"({"name": "oplog.rs", "type": "collection"})")));
}

// Servers of their own: a step-down and a resized oplog change what every client sees.
class replset_own_server : public own_server_test {
 protected:
  void insert(int id) {
    bson::document ins{{"insert", "c"},
                       {"documents", bson::array{bson::value(bson::document{{"_id", id}})}}};
    ASSERT_EQ(at(run(ins, "db"), "ok"), bson::value(1.0));
  }
  bson::document oplog_stats() { return run(J(R"({"collStats": "oplog.rs"})"), "local"); }
};

TEST_F(replset_own_server, status_follows_a_step_down_and_the_reelection) {
  start();
  const auto before = run(J(R"({"replSetGetStatus": 1})"));
  const auto first_election = at(before, "members.0.electionTime");
  ASSERT_TRUE(first_election.is<bson::timestamp>());
  ASSERT_EQ(at(run(J(R"({"replSetStepDown": 2, "force": true})")), "ok"), bson::value(1.0));
  const auto during = run(J(R"({"replSetGetStatus": 1})"));
  EXPECT_EQ(at(during, "ok"), bson::value(1.0));
  EXPECT_EQ(at(during, "myState"), bson::value(std::int32_t{2}));
  EXPECT_EQ(at(during, "members.0.state"), bson::value(std::int32_t{2}));
  EXPECT_EQ(at(during, "members.0.stateStr"), bson::value("SECONDARY"));
  EXPECT_EQ(during.find_path("members.0.electionTime"), nullptr);
  EXPECT_EQ(at(run(J(R"({"hello": 1})")), "secondary"), bson::value(true));
  std::this_thread::sleep_for(2500ms);
  const auto after = run(J(R"({"replSetGetStatus": 1})"));
  EXPECT_EQ(at(after, "myState"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(after, "members.0.stateStr"), bson::value("PRIMARY"));
  ASSERT_TRUE(at(after, "members.0.electionTime").is<bson::timestamp>());
  EXPECT_GT(at(after, "members.0.electionTime").as<bson::timestamp>(),
            first_election.as<bson::timestamp>());
}

TEST_F(replset_own_server, resize_oplog_moves_the_bound_that_collstats_reports) {
  start({"--oplog-max-events", "5"});
  for (int i = 0; i < 10; ++i)
    insert(i);
  auto stats = oplog_stats();
  // Every kept entry counts 1 KiB: --oplog-max-events 5 is 5120 bytes, and it is full.
  EXPECT_EQ(at(stats, "maxSize"), bson::value(std::int32_t{5 * 1024}));
  EXPECT_EQ(at(stats, "count"), bson::value(std::int32_t{5}));
  EXPECT_EQ(at(stats, "size"), bson::value(std::int32_t{5 * 1024}));
  const auto oldest = [&] {
    return run(J(R"({"find": "oplog.rs", "filter": {}, "sort": {"$natural": 1}, "limit": 1})"),
               "local");
  };
  const auto oldest_before = at(oldest(), "cursor.firstBatch.0.ts");

  const auto r = run(J(R"({"replSetResizeOplog": 1, "size": 990, "minRetentionHours": 1.5})"));
  ASSERT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);
  stats = oplog_stats();
  EXPECT_EQ(at(stats, "maxSize"), bson::value(std::int32_t{990 * 1024 * 1024}));
  EXPECT_EQ(at(run(J(R"({"listCollections": 1, "filter": {"name": "oplog.rs"}})"), "local"),
               "cursor.firstBatch.0.options.size"),
            bson::value(std::int32_t{990 * 1024 * 1024}));
  // Nothing is dropped any more: the history grows past the old bound.
  for (int i = 10; i < 13; ++i)
    insert(i);
  EXPECT_EQ(at(oplog_stats(), "count"), bson::value(std::int32_t{8}));
  EXPECT_EQ(at(oldest(), "cursor.firstBatch.0.ts"), oldest_before);
  // The $collStats stage mongosh's stats() runs says the same.
  const auto staged = run(J(R"({"aggregate": "oplog.rs", "cursor": {},
                                "pipeline": [{"$collStats": {"storageStats": {"scale": 1}}}]})"),
                          "local");
  EXPECT_EQ(at(staged, "cursor.firstBatch.0.storageStats.maxSize"),
            bson::value(std::int32_t{990 * 1024 * 1024}));
  EXPECT_EQ(at(staged, "cursor.firstBatch.0.storageStats.count"), bson::value(std::int32_t{8}));
}

TEST_F(replset_own_server, resize_oplog_validates_as_mongodb_does) {
  start();
  const auto fails = [&](const char* json, int code) {
    const auto r = run(J(json));
    EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{code})) << json << ": " << bson::to_json(r);
    return at(r, "errmsg").is_string() ? at(r, "errmsg").as_string() : std::string();
  };
  EXPECT_EQ(fails(R"({"replSetResizeOplog": 1, "size": 989})", 51024),
            "BSON field 'size' value must be >= 990, actual value '989'");
  fails(R"({"replSetResizeOplog": 1, "size": 2e9})", 51024);
  EXPECT_EQ(fails(R"({"replSetResizeOplog": 1, "size": "1000"})", 14),
            "BSON field 'replSetResizeOplog.size' is the wrong type 'string', expected types "
            "'[long, int, decimal, double]'");
  fails(R"({"replSetResizeOplog": 1, "minRetentionHours": -1})", 51024);
  fails(R"({"replSetResizeOplog": 1, "sizeMB": 1000})", 40415);
  const auto other_db = run(J(R"({"replSetResizeOplog": 1, "size": 1000})"), "db");
  EXPECT_EQ(at(other_db, "code"), bson::value(std::int32_t{13}));
  // None of them changed the bound (the default 1,000,000 entries).
  EXPECT_EQ(at(oplog_stats(), "maxSize"), bson::value(std::int32_t{1000000 * 1024}));
}

}  // namespace
}  // namespace mongo_emulator::test
