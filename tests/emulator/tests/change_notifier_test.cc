// Targeted wake-ups: a parked await-data getMore wakes for changes its stream can see (or for
// changes beyond documents), not for writes to other namespaces, and never misses a change
// announced before it parked.

#include "change_notifier.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace mongo_emulator {
namespace {

namespace asio = boost::asio;

class change_notifier_test : public ::testing::Test {
 protected:
  asio::io_context io;
  change_notifier n;
  bool woken = false;

  change_notifier::timer_ptr park(watch_scope scope, std::uint64_t seen = 0) {
    auto t = std::make_shared<asio::steady_timer>(io, std::chrono::hours(1));
    t->async_wait([this](const boost::system::error_code& ec) {
      woken = ec == asio::error::operation_aborted;
    });
    n.park(t, seen, std::move(scope));
    return t;
  }
  bool run() {
    io.poll();
    io.restart();
    return woken;
  }
};

const watch_scope orders{watch_scope::kind::collection, "shop", "orders"};

TEST_F(change_notifier_test, other_collections_do_not_wake) {
  auto t = park(orders);
  n.notify(1, {false, {{"shop", "customers"}, {"other", "orders"}}});
  EXPECT_FALSE(run());
  n.notify(2, {false, {{"shop", "customers"}, {"shop", "orders"}}});
  EXPECT_TRUE(run());
}

TEST_F(change_notifier_test, database_and_cluster_scopes) {
  auto t = park({watch_scope::kind::database, "shop", {}});
  n.notify(1, {false, {{"meta", "checkpoints"}}});
  EXPECT_FALSE(run());
  n.notify(2, {false, {{"shop", "anything"}}});
  EXPECT_TRUE(run());
  woken = false;
  auto u = park({}, 2);
  n.notify(3, {false, {{"meta", "checkpoints"}}});
  EXPECT_TRUE(run());
}

TEST_F(change_notifier_test, drops_and_renames_wake_everyone) {
  auto t = park(orders);
  n.notify(1, {true, {}});
  EXPECT_TRUE(run());
}

TEST_F(change_notifier_test, a_change_announced_before_parking_wakes_at_once) {
  n.notify(5, {false, {{"x", "y"}}});
  auto t = park(orders, 4);
  EXPECT_TRUE(run());
}

}  // namespace
}  // namespace mongo_emulator
