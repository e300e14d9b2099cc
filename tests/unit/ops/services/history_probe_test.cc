// The history-headroom probe against a scripted oplog: headroom per running source, series of
// sources that stop going, and a refused read that removes them, is logged once with the
// privilege to grant, and heals when the read succeeds again.
#include "ops/services/history_probe.h"

#include <gtest/gtest.h>

#include <iostream>
#include <mutex>
#include <sstream>

#include "../oplog_client.h"
#include "common/log.h"

namespace denormd::ops {
namespace {

using testing::oplog_client;

// The value of `name{label="value"}` in the exposition text, if present.
std::optional<double> series(const metrics::metrics& m, const std::string& name,
                             const std::string& label, const std::string& value) {
  std::istringstream in(m.serialize());
  const std::string prefix = name + "{" + label + "=\"" + value + "\"} ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return std::nullopt;
}

std::optional<double> headroom(const metrics::metrics& m, const std::string& source) {
  return series(m, "denormd_history_headroom_seconds", "source", source);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

class history_probe_test : public ::testing::Test {
 protected:
  void SetUp() override { log::configure(log::format::text, log::level::info, &log_); }
  void TearDown() override { log::configure(log::format::text, log::level::info, &std::cerr); }

  positions_fn positions() {
    return [this] {
      std::lock_guard lock(mutex_);
      return running_;
    };
  }
  void run(std::vector<source_position> p) {
    std::lock_guard lock(mutex_);
    running_ = std::move(p);
  }

  std::ostringstream log_;
  oplog_client client_;
  metrics::metrics metrics_{"test"};
  std::mutex mutex_;
  std::vector<source_position> running_;
};

TEST_F(history_probe_test, sets_the_headroom_of_each_running_source) {
  history_probe probe(client_, metrics_, positions(), std::chrono::seconds(30));
  client_.keep(bson::timestamp{1700000000, 3});
  run({{"shop.customers", {1700011520, 1}}, {"shop.orders", {1700000060, 9}}});
  probe.probe();
  EXPECT_EQ(headroom(metrics_, "shop.customers"), 11520);
  EXPECT_EQ(headroom(metrics_, "shop.orders"), 60);
  // Writes push old entries out: the oldest kept entry moves on and the headroom shrinks.
  client_.keep(bson::timestamp{1700000050, 1});
  probe.probe();
  EXPECT_EQ(headroom(metrics_, "shop.orders"), 10);
  // The oldest kept entry passed the position: a restart would lose history.
  client_.keep(bson::timestamp{1700000070, 1});
  probe.probe();
  EXPECT_EQ(headroom(metrics_, "shop.orders"), -10);
  EXPECT_EQ(log_.str(), "");
}

TEST_F(history_probe_test, a_source_that_stops_loses_its_series) {
  history_probe probe(client_, metrics_, positions(), std::chrono::seconds(30));
  client_.keep(bson::timestamp{100, 1});
  run({{"shop.customers", {400, 1}}, {"shop.orders", {200, 1}}});
  probe.probe();
  run({{"shop.customers", {500, 1}}});
  probe.probe();
  EXPECT_EQ(headroom(metrics_, "shop.customers"), 400);
  EXPECT_FALSE(headroom(metrics_, "shop.orders"));
  // No entry to measure against (an empty oplog): no series at all.
  client_.keep(std::nullopt);
  probe.probe();
  EXPECT_FALSE(headroom(metrics_, "shop.customers"));
}

TEST_F(history_probe_test, a_refused_read_is_logged_once_and_leaves_the_gauge_absent) {
  history_probe probe(client_, metrics_, positions(), std::chrono::seconds(30));
  client_.keep(bson::timestamp{100, 1});
  run({{"shop.customers", {400, 1}}});
  probe.probe();
  ASSERT_EQ(headroom(metrics_, "shop.customers"), 300);
  client_.refuse(testing::unauthorized());
  for (int round = 0; round < 5; ++round)
    probe.probe();
  EXPECT_FALSE(headroom(metrics_, "shop.customers"));
  const std::string text = metrics_.serialize();
  EXPECT_NE(text.find("denormd_errors_total{code=\"13\",stage=\"headroom\"} 5"), std::string::npos)
      << text;
  const std::string logged = log_.str();
  EXPECT_EQ(count(logged, "\n"), 1U) << logged;
  EXPECT_NE(logged.find("WARN"), std::string::npos) << logged;
  EXPECT_NE(logged.find("lacks the find privilege on local.oplog.rs"), std::string::npos) << logged;
  // Granted: the gauge is back, and the log says so once.
  client_.keep(bson::timestamp{150, 1});
  probe.probe();
  probe.probe();
  EXPECT_EQ(headroom(metrics_, "shop.customers"), 250);
  EXPECT_EQ(count(log_.str(), "readable again"), 1U) << log_.str();
}

TEST_F(history_probe_test, probes_at_start_and_every_interval_until_stopped) {
  client_.keep(bson::timestamp{100, 1});
  run({{"shop.customers", {160, 1}}});
  history_probe probe(client_, metrics_, positions(), std::chrono::milliseconds(5));
  probe.start();
  for (int k = 0; k < 400 && client_.finds() < 3; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  probe.stop();
  const int finds = client_.finds();
  EXPECT_GE(finds, 3);
  EXPECT_EQ(headroom(metrics_, "shop.customers"), 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(client_.finds(), finds);  // stopped: no more reads
}

}  // namespace
}  // namespace denormd::ops
