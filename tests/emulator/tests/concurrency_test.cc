// Many connections at once: concurrent writers on separate clients, a change stream that must
// see every write exactly once, and many idle connections held open.

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "emulator_fixture.h"
#include "raw_client.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;

class concurrency : public emulator_test {};

TEST_F(concurrency, concurrent_writers_and_one_stream_see_every_write_once) {
  constexpr int writers = 8;
  constexpr int per_writer = 150;
  auto cursor = open_stream("c");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto c = test_client::connect(uri());
      if (!c) {
        ++failures;
        return;
      }
      for (int i = 0; i < per_writer; ++i) {
        bson::document cmd;
        cmd.append("insert", "c");
        cmd.append("documents",
                   bson::array{bson::value(bson::document{{"_id", std::int32_t{w * 1000 + i}}})});
        if (!c->command(db(), cmd)) ++failures;
        if (i % 10 == 0 && !c->command(db(), J(R"({"find": "c", "filter": {"_id": 1}})")))
          ++failures;
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(failures.load(), 0);

  std::set<std::int32_t> seen;
  int events = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (events < writers * per_writer && std::chrono::steady_clock::now() < deadline) {
    auto more = get_more(cursor, 200);
    for (const auto& e : batch(more)) {
      ++events;
      seen.insert(at(e.as_document(), "documentKey._id").as<std::int32_t>());
    }
  }
  EXPECT_EQ(events, writers * per_writer);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(writers * per_writer));
  EXPECT_EQ(at(run_ok(J(R"({"count": "c"})")), "n"),
            bson::value(std::int32_t{writers * per_writer}));
}

TEST_F(concurrency, many_idle_connections_do_not_stop_service) {
  std::vector<raw_client> idle;
  for (int i = 0; i < 200; ++i) {
    auto c = raw_client::connect(host_port());
    ASSERT_TRUE(c) << i;
    idle.push_back(std::move(*c));
  }
  // Half of them hold an await-data getMore open at the same time.
  for (std::size_t i = 0; i < idle.size(); i += 2) {
    bson::document gm;
    gm.append("aggregate", "c");
    gm.append("pipeline",
              bson::array{bson::value(bson::document{{"$changeStream", bson::document{}}})});
    gm.append("cursor", bson::document{});
    gm.append("$db", db());
    auto r = idle[i].command(gm);
    ASSERT_TRUE(r);
    bson::document more;
    more.append("getMore", at(*r, "cursor.id"));
    more.append("collection", "c");
    more.append("maxTimeMS", std::int32_t{2000});
    more.append("$db", db());
    ASSERT_TRUE(idle[i].send(encode_op_msg(7, more)));
  }
  const auto start = std::chrono::steady_clock::now();
  run_ok(J(R"({"insert": "c", "documents": [{"_id": 1}]})"));
  run_ok(J(R"({"ping": 1})"), "admin");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  // Every waiting getMore wakes with the insert.
  for (std::size_t i = 0; i < idle.size(); i += 2) {
    auto r = idle[i].receive(5s);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(at(r->doc, "cursor.nextBatch").as_array().size(), 1U) << i;
  }
}

}  // namespace
}  // namespace mongo_emulator::test

namespace mongo_emulator::test {
namespace {

TEST(server_lifecycle, sigterm_stops_cleanly_with_busy_connections) {
  if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "starts its own emulator";
  auto server = denormd::test::emulator_process::start();
  ASSERT_TRUE(server) << server.error().message;
  auto waiting = raw_client::connect(server->host_port());
  auto idle = raw_client::connect(server->host_port());
  ASSERT_TRUE(waiting && idle);
  auto open = waiting->command(
      J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}, "$db": "x"})"));
  ASSERT_TRUE(open);
  bson::document gm;
  gm.append("getMore", at(*open, "cursor.id"));
  gm.append("collection", "c");
  gm.append("maxTimeMS", std::int32_t{30000});
  gm.append("$db", "x");
  ASSERT_TRUE(waiting->send(encode_op_msg(2, gm)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(server->stop(std::chrono::seconds(5)), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_TRUE(waiting->closed_by_peer(std::chrono::seconds(2)));
}

}  // namespace
}  // namespace mongo_emulator::test
