// getParameter and setParameter (and their effects on the knobs the emulator has), top's
// per-collection counters, collStats and $collStats, as MongoDB 6.0 answers them.
// The shared-server tests only read; the ones that change the server run their own.

#include <gtest/gtest.h>

#include <thread>

#include "emulator_fixture.h"
#include "own_server_test.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using denormd::test::emulator_process;

class diagnostic_commands : public emulator_test {};

TEST_F(diagnostic_commands, get_parameter_reads_named_and_all_knobs) {
  const auto one =
      run_ok(J(R"({"getParameter": 1, "transactionLifetimeLimitSeconds": 1})"), "admin");
  ASSERT_TRUE(at(one, "transactionLifetimeLimitSeconds").is<std::int32_t>()) << bson::to_json(one);
  EXPECT_GE(at(one, "transactionLifetimeLimitSeconds").as<std::int32_t>(), 1);
  EXPECT_EQ(one.find_path("featureCompatibilityVersion"), nullptr);
  const auto all = run_ok(J(R"({"getParameter": "*"})"), "admin");
  EXPECT_EQ(at(all, "transactionLifetimeLimitSeconds"), at(one, "transactionLifetimeLimitSeconds"));
  EXPECT_TRUE(at(all, "featureCompatibilityVersion.version").is_string());
  const auto details =
      run_ok(J(R"({"getParameter": {"showDetails": true}, "transactionLifetimeLimitSeconds": 1})"),
             "admin");
  EXPECT_EQ(at(details, "transactionLifetimeLimitSeconds.value"),
            at(one, "transactionLifetimeLimitSeconds"));
  EXPECT_EQ(at(details, "transactionLifetimeLimitSeconds.settableAtRuntime"), bson::value(true));
  const auto none =
      run_fail(J(R"({"getParameter": 1, "noSuchParameterAnywhere": 1})"), 72, "admin");
  EXPECT_EQ(at(none, "errmsg"), bson::value("no option found to get"));
  run_fail(J(R"({"getParameter": 1, "transactionLifetimeLimitSeconds": 1})"), 13);
  run_fail(J(R"({"setParameter": 1, "noSuchParameterAnywhere": 1})"), 72, "admin");
  run_fail(J(R"({"setParameter": 1, "featureCompatibilityVersion": "6.0"})"), 20, "admin");
  if (denormd::test::emulator_only_available()) {
    EXPECT_EQ(at(all, "featureCompatibilityVersion"), bson::value(J(R"({"version": "6.0"})")));
    EXPECT_EQ(at(all, "internalChangeStreamRespectsReadPreference"), bson::value(false));
  }
}

TEST_F(diagnostic_commands, coll_stats_reports_sizes_counts_and_indexes) {
  insert("c", R"([{"_id": 1}, {"_id": 2}, {"_id": 3}])");
  run_ok(J(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"));
  const auto s = run_ok(J(R"({"collStats": "c"})"));
  EXPECT_EQ(at(s, "ns"), bson::value(db() + ".c"));
  EXPECT_EQ(at(s, "count"), bson::value(std::int32_t{3}));
  // {_id: <int32>} is 14 bytes of BSON.
  EXPECT_EQ(at(s, "size"), bson::value(std::int32_t{42}));
  EXPECT_EQ(at(s, "avgObjSize"), bson::value(std::int32_t{14}));
  EXPECT_EQ(at(s, "capped"), bson::value(false));
  EXPECT_EQ(at(s, "nindexes"), bson::value(std::int32_t{2}));
  EXPECT_TRUE(at(s, "indexSizes._id_").is_number());
  EXPECT_TRUE(at(s, "indexSizes.a_1").is_number());
  EXPECT_EQ(at(s, "scaleFactor"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(run_ok(J(R"({"collStats": "c", "scale": 2})")), "size"),
            bson::value(std::int32_t{21}));
  run_fail(J(R"({"collStats": "c", "scale": 0})"), 2);
  // A missing collection: zeros, not an error.
  const auto missing = run_ok(J(R"({"collStats": "nothing_here"})"));
  EXPECT_EQ(at(missing, "count"), bson::value(std::int32_t{0}));
  EXPECT_EQ(at(missing, "size"), bson::value(std::int32_t{0}));

  // The $collStats stage mongosh's db.c.stats() runs, followed by other stages.
  const auto staged = run_ok(J(R"({"aggregate": "c", "cursor": {}, "pipeline": [
      {"$collStats": {"storageStats": {"scale": 1}, "count": {}}},
      {"$project": {"ns": 1, "count": 1, "n": "$storageStats.count", "host": 1,
                    "localTime": 1}}]})"));
  ASSERT_EQ(batch(staged).size(), 1U);
  const auto& d = batch(staged)[0].as_document();
  EXPECT_EQ(at(d, "ns"), bson::value(db() + ".c"));
  EXPECT_EQ(at(d, "count"), bson::value(std::int32_t{3}));
  EXPECT_EQ(at(d, "n"), bson::value(std::int32_t{3}));
  EXPECT_TRUE(at(d, "host").is_string());
  EXPECT_TRUE(at(d, "localTime").is<bson::date_time>());
  run_fail(J(R"({"aggregate": "nothing_here", "cursor": {},
                 "pipeline": [{"$collStats": {"storageStats": {}}}]})"),
           26);
  run_fail(J(R"({"aggregate": "c", "cursor": {},
                 "pipeline": [{"$collStats": {"storageStats": {"scale": 0}}}]})"),
           51024);
  run_fail(J(R"({"aggregate": "c", "cursor": {}, "pipeline": [{"$collStats": {"bogus": {}}}]})"),
           40415);
  run_fail(J(R"({"aggregate": "c", "cursor": {},
                 "pipeline": [{"$match": {}}, {"$collStats": {"count": {}}}]})"),
           40602);
}

// A server of its own: parameters and the top counters are the server's.
class diagnostics_own_server : public own_server_test {
 protected:
  static bson::document with_transaction(bson::document cmd, bool first) {
    cmd.append("lsid", bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 9)}}});
    cmd.append("txnNumber", std::int64_t{1});
    if (first) cmd.append("startTransaction", true);
    cmd.append("autocommit", false);
    return cmd;
  }
  // {time, count} of counter `name` of namespace `ns` in a top reply.
  static std::pair<double, double> counter(const bson::document& top, const std::string& ns,
                                           const std::string& name) {
    const auto* c = top.get("totals") ? top.get("totals")->as_document().get(ns) : nullptr;
    const auto* e = c != nullptr ? c->as_document().get(name) : nullptr;
    if (e == nullptr) return {-1, -1};
    return {at(e->as_document(), "time").to_double(), at(e->as_document(), "count").to_double()};
  }
};

TEST_F(diagnostics_own_server, set_parameter_shortens_the_transaction_lifetime) {
  start();
  auto r = run(J(R"({"setParameter": 1, "transactionLifetimeLimitSeconds": 1})"));
  ASSERT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);
  EXPECT_EQ(at(r, "was"), bson::value(std::int32_t{60}));
  EXPECT_EQ(at(run(J(R"({"getParameter": 1, "transactionLifetimeLimitSeconds": 1})")),
               "transactionLifetimeLimitSeconds"),
            bson::value(std::int32_t{1}));
  r = run(with_transaction(J(R"({"insert": "c", "documents": [{"_id": 1}]})"), true), "db");
  ASSERT_EQ(at(r, "ok"), bson::value(1.0)) << bson::to_json(r);
  std::this_thread::sleep_for(1500ms);
  // Past the new lifetime the server has aborted it, as MongoDB's reaper would.
  r = run(with_transaction(J(R"({"commitTransaction": 1})"), false));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{251})) << bson::to_json(r);
  EXPECT_EQ(at(run(J(R"({"count": "c"})"), "db"), "n"), bson::value(std::int32_t{0}));
  // Refused values change nothing.
  r = run(J(R"({"setParameter": 1, "transactionLifetimeLimitSeconds": 0})"));
  EXPECT_EQ(at(r, "code"), bson::value(std::int32_t{2}));
  EXPECT_EQ(at(r, "errmsg"),
            bson::value("Invalid value for parameter transactionLifetimeLimitSeconds: 0 is not "
                        "greater than or equal to 1"));
  EXPECT_EQ(at(run(J(R"({"getParameter": 1, "transactionLifetimeLimitSeconds": 1})")),
               "transactionLifetimeLimitSeconds"),
            bson::value(std::int32_t{1}));
}

// internalChangeStreamRespectsReadPreference set at run time acts as the startup option does.
TEST_F(diagnostics_own_server, set_parameter_turns_on_the_read_preference_knob) {
  start();
  auto r = run(J(R"({"setParameter": 1, "internalChangeStreamRespectsReadPreference": true})"));
  EXPECT_EQ(at(r, "was"), bson::value(false));
  const auto stream =
      run(J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})"), "db");
  ASSERT_EQ(at(run(J(R"({"replSetStepDown": 2, "force": true})")), "ok"), bson::value(1.0));
  bson::document gm{{"getMore", at(stream, "cursor.id")}, {"collection", "c"}};
  gm.append("maxTimeMS", std::int32_t{10});
  EXPECT_EQ(at(run(gm, "db"), "code"), bson::value(std::int32_t{11602}));
}

TEST_F(diagnostics_own_server, top_counts_each_command_by_kind_and_lock) {
  start();
  const std::string ns = "shop.c";
  const auto ok = [&](const char* json) {
    const auto r = run(J(json), "shop");
    EXPECT_EQ(at(r, "ok"), bson::value(1.0)) << json << ": " << bson::to_json(r);
    return r;
  };
  ok(R"({"insert": "c", "documents": [{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3}]})");
  ok(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}},
                                    {"q": {"_id": 2}, "u": {"$set": {"b": 2}}}]})");
  ok(R"({"delete": "c", "deletes": [{"q": {"_id": 3}, "limit": 1}]})");
  const auto found = ok(R"({"find": "c", "filter": {}, "batchSize": 1})");
  bson::document gm{{"getMore", at(found, "cursor.id")}, {"collection", "c"}};
  EXPECT_EQ(at(run(gm, "shop"), "ok"), bson::value(1.0));
  ok(R"({"aggregate": "c", "pipeline": [], "cursor": {}})");
  ok(R"({"count": "c"})");
  ok(R"({"distinct": "c", "key": "a"})");
  ok(R"({"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"c": 1}}})");
  // A failed command is not counted.
  EXPECT_EQ(at(run(J(R"({"find": "c", "filter": {"$bogus": 1}})"), "shop"), "ok"),
            bson::value(0.0));

  const auto top = run(J(R"({"top": 1})"));
  ASSERT_EQ(at(top, "ok"), bson::value(1.0)) << bson::to_json(top);
  EXPECT_EQ(at(top, "totals.note"), bson::value("all times in microseconds"));
  EXPECT_EQ(counter(top, ns, "queries").second, 1);
  EXPECT_EQ(counter(top, ns, "getmore").second, 1);
  EXPECT_EQ(counter(top, ns, "insert").second, 1);  // one per command
  EXPECT_EQ(counter(top, ns, "update").second, 2);  // one per statement
  EXPECT_EQ(counter(top, ns, "remove").second, 1);
  EXPECT_EQ(counter(top, ns, "commands").second, 4);   // aggregate, count, distinct, fAM
  EXPECT_EQ(counter(top, ns, "readLock").second, 5);   // find, getMore, aggregate, count, distinct
  EXPECT_EQ(counter(top, ns, "writeLock").second, 5);  // insert, 2 updates, delete, findAndModify
  EXPECT_EQ(counter(top, ns, "total").second, 10);
  EXPECT_EQ(counter(top, ns, "total").first,
            counter(top, ns, "readLock").first + counter(top, ns, "writeLock").first);
  EXPECT_GT(counter(top, ns, "total").first, 0);
  // The namespace is one key (it holds a dot); counts are int32 while they fit.
  EXPECT_TRUE(top.get("totals")
                  ->as_document()
                  .get(ns)
                  ->as_document()
                  .get("total")
                  ->as_document()
                  .get("count")
                  ->is<std::int32_t>());
  // Dropping the collection removes its entry (Top::collectionDropped).
  ok(R"({"drop": "c"})");
  EXPECT_EQ(counter(run(J(R"({"top": 1})")), ns, "total").second, -1);
  EXPECT_EQ(at(run(J(R"({"top": 1})"), "shop"), "code"), bson::value(std::int32_t{13}));
}

}  // namespace
}  // namespace mongo_emulator::test
