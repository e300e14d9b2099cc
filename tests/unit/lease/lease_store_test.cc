// The lease table in a real server (the test server, or DENORMD_TEST_URI): acquire, renew,
// raise the epoch, release and take over, each a conditional update judged by the server. A
// stale holder (an older epoch, even of the same owner) must change nothing.
#include "lease/lease_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>

#include "emulator_process.h"
#include "mongo/connection.h"

namespace denormd::lease {
namespace {

using namespace std::chrono_literals;

// Long enough that a loaded machine does not let a lease renewed every half TTL expire.
constexpr std::int64_t ttl_ms = 1000;

class lease_store_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = mongo::connection::open(test::test_uri(), "lease_store_test");
    ASSERT_TRUE(c) << c.error().to_string();
    conn_ = std::move(c).value();
    db_ = "lease_store_test_" + std::to_string(std::random_device{}());
    store_ = std::make_unique<lease_store>(*conn_, db_, ttl_ms);
  }
  void TearDown() override {
    if (conn_) (void)conn_->command(db_, bson::document{{"dropDatabase", 1}});
  }

  // The epoch `me` takes `unit` with (nullopt: another instance holds it).
  std::optional<std::int64_t> acquire(const std::string& unit, const std::string& me) {
    auto r = store_->acquire(unit, me);
    EXPECT_TRUE(r) << r.error().to_string();
    return r ? *r : std::nullopt;
  }
  bool renew(const std::string& unit, const std::string& me, std::int64_t epoch) {
    auto r = store_->renew(unit, me, epoch);
    EXPECT_TRUE(r) << r.error().to_string();
    return r && *r;
  }
  // The row of `unit` as the table reads it.
  lease_row row(const std::string& unit) {
    auto t = store_->table();
    EXPECT_TRUE(t) << t.error().to_string();
    for (const auto& e : t ? *t : std::vector<lease_entry>{}) {
      if (e.row.unit == unit) return e.row;
    }
    ADD_FAILURE() << "no row for " << unit;
    return {};
  }
  // Waits past the TTL: the server's clock judges the expiry.
  // A transaction, left open, that wrote `unit`'s row (denormd's own never do: the write fence
  // is the checkpoint document; an operator's or a script's might).
  std::unique_ptr<mongo::transaction> fence_in_transaction(const std::string& unit) {
    auto txn = conn_->start_transaction();
    EXPECT_TRUE(txn) << txn.error().to_string();
    if (!txn) return nullptr;
    const bson::document filter{{"_id", unit}};
    const bson::document fence{{"$set", bson::document{{"fencedAt", bson::date_time{1}}}}};
    mongo::write_request r;
    r.filter = &filter;
    r.update = &fence;
    auto fenced = (*txn)->update_bulk(db_, leases_collection, std::span(&r, 1), true);
    EXPECT_TRUE(fenced && !fenced->write_error && fenced->matched == 1);
    return std::move(txn).value();
  }

  static void expire() { std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms) + 200ms); }

  std::unique_ptr<mongo::connection> conn_;
  std::string db_;
  std::unique_ptr<lease_store> store_;
};

TEST_F(lease_store_test, acquire_takes_a_free_unit_and_each_take_raises_the_epoch) {
  EXPECT_EQ(acquire("a.x", "one"), 1);
  EXPECT_EQ(acquire("a.y", "one"), 1);  // one epoch sequence per unit
  EXPECT_EQ(row("a.x").owner, "one");
  EXPECT_FALSE(row("a.x").expired);
  EXPECT_EQ(acquire("a.x", "two"), std::nullopt);  // held and not expired
  EXPECT_EQ(row("a.x").owner, "one");
  EXPECT_EQ(acquire("a.x", "one"), 2);  // its own again: a new epoch
}

TEST_F(lease_store_test, renew_extends_only_the_current_epoch_of_its_owner) {
  ASSERT_EQ(acquire("a.x", "one"), 1);
  EXPECT_TRUE(renew("a.x", "one", 1));
  EXPECT_FALSE(renew("a.x", "two", 1));  // not its owner
  // Renewed within each TTL, the lease outlives several of them.
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms / 2));
    EXPECT_TRUE(renew("a.x", "one", 1));
  }
  EXPECT_EQ(acquire("a.x", "two"), std::nullopt);
  // The same owner took it again (a restart under the same instance id): the older epoch's
  // holder is stale and must not keep it alive.
  ASSERT_EQ(acquire("a.x", "one"), 2);
  EXPECT_FALSE(renew("a.x", "one", 1));
  EXPECT_TRUE(renew("a.x", "one", 2));
  EXPECT_FALSE(renew("a.x", "one", 3));  // a later epoch than the table's is not it either
  EXPECT_FALSE(renew("a.nothing", "one", 1));
}

TEST_F(lease_store_test, an_expired_lease_is_taken_over_and_the_old_holder_is_fenced) {
  ASSERT_EQ(acquire("a.x", "one"), 1);
  expire();
  EXPECT_TRUE(row("a.x").expired);
  ASSERT_EQ(acquire("a.x", "two"), 2);
  EXPECT_EQ(row("a.x").owner, "two");
  // The old holder wakes up: it cannot renew, raise or release what is now another's.
  EXPECT_FALSE(renew("a.x", "one", 1));
  auto raised = store_->raise_epoch("a.x", "one", 1, 5);
  ASSERT_TRUE(raised) << raised.error().to_string();
  EXPECT_FALSE(*raised);
  ASSERT_TRUE(store_->release("a.x", "one", 1));
  EXPECT_EQ(row("a.x").owner, "two");
  EXPECT_EQ(row("a.x").epoch, 2);
  EXPECT_FALSE(row("a.x").expired);
  // Taken back by the first owner after the second's lease expired: epoch 3. Its renewal at
  // epoch 1, from before the take-over, still fails though the owner is the same again.
  expire();
  ASSERT_EQ(acquire("a.x", "one"), 3);
  EXPECT_FALSE(renew("a.x", "one", 1));
  EXPECT_FALSE(renew("a.x", "two", 2));
  EXPECT_TRUE(renew("a.x", "one", 3));
}

TEST_F(lease_store_test, a_row_an_open_transaction_wrote_fails_the_take_over_in_bounded_time) {
  // A transaction that wrote the row holds it until it ends: taking it waits no longer than
  // its statement limit.
  ASSERT_EQ(acquire("a.x", "one"), 1);
  ASSERT_EQ(acquire("a.y", "two"), 1);
  auto txn = fence_in_transaction("a.x");
  ASSERT_TRUE(txn);
  expire();
  const auto sent = std::chrono::steady_clock::now();
  auto taken = store_->acquire("a.x", "two");
  const auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, 50u) << taken.error().to_string();  // MaxTimeMSExpired
  // Its statement's limit (100 ms here), not the transaction's lifetime (60 s by default).
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(renew("a.y", "two", 1));  // other rows go on
  txn.reset();                          // the transaction ends (aborted): the row is free
  EXPECT_EQ(acquire("a.x", "two"), 2);
}

TEST_F(lease_store_test, release_frees_the_unit_at_once_for_the_next_epoch) {
  ASSERT_EQ(acquire("a.x", "one"), 1);
  ASSERT_TRUE(store_->release("a.x", "one", 1));
  EXPECT_EQ(row("a.x").owner, "");
  EXPECT_TRUE(row("a.x").expired);
  EXPECT_FALSE(renew("a.x", "one", 1));  // given up is given up
  EXPECT_EQ(acquire("a.x", "two"), 2);   // no TTL to wait for
  // A release by the new owner under an older epoch leaves it held.
  ASSERT_TRUE(store_->release("a.x", "two", 1));
  EXPECT_EQ(row("a.x").owner, "two");
}

TEST_F(lease_store_test, raise_epoch_moves_the_current_epoch_only) {
  ASSERT_EQ(acquire("a.x", "one"), 1);
  auto wrong = store_->raise_epoch("a.x", "one", 2, 7);
  ASSERT_TRUE(wrong) << wrong.error().to_string();
  EXPECT_FALSE(*wrong);
  auto raised = store_->raise_epoch("a.x", "one", 1, 7);
  ASSERT_TRUE(raised) << raised.error().to_string();
  EXPECT_TRUE(*raised);
  EXPECT_EQ(row("a.x").epoch, 7);
  EXPECT_FALSE(renew("a.x", "one", 1));
  EXPECT_TRUE(renew("a.x", "one", 7));
  EXPECT_EQ(acquire("a.x", "one"), 8);
}

TEST_F(lease_store_test, heartbeats_say_who_is_live_until_they_leave_or_expire) {
  ASSERT_TRUE(store_->heartbeat("one", {"a.x"}, {}));
  ASSERT_TRUE(store_->heartbeat("two", {}, {}));
  auto live = store_->live();
  ASSERT_TRUE(live) << live.error().to_string();
  std::sort(live->begin(), live->end());
  EXPECT_EQ(*live, (std::vector<std::string>{"one", "two"}));
  ASSERT_TRUE(store_->leave("two"));
  live = store_->live();
  ASSERT_TRUE(live);
  EXPECT_EQ(*live, std::vector<std::string>{"one"});
  expire();
  live = store_->live();
  ASSERT_TRUE(live);
  EXPECT_TRUE(live->empty());
}

TEST_F(lease_store_test, a_heartbeat_keeps_its_report_as_given_and_instances_read_it_back) {
  instance_report mine;
  mine.version = "1.2.3";
  mine.started_ms = 1700000000000;
  unit_report u;
  u.unit = "a.x";
  u.streaming = false;
  // Text from a server's error: a "$" must stay text, never become an operator or a path.
  u.state = "change stream failed: $where is not allowed {\"$ne\": 1}";
  u.lag_seconds = 1.5;
  u.applied_through = bson::timestamp{1700000000, 7};
  u.events_per_second = 250;
  u.last_event_ms = 1700000000123;
  u.errors = 3;
  u.lag = {{1700000000000, 0.25}, {1700000005000, 1.5}};
  mine.units.push_back(u);
  ASSERT_TRUE(store_->heartbeat("one", {"a.x"}, to_document(mine)));
  ASSERT_TRUE(store_->heartbeat("two", {}, {}));
  ASSERT_TRUE(store_->leave("two"));
  auto rows = store_->instances();
  ASSERT_TRUE(rows) << rows.error().to_string();
  std::sort(rows->begin(), rows->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  ASSERT_EQ(rows->size(), 2u);
  const instance_row& one = (*rows)[0];
  EXPECT_EQ(one.name, "one");
  EXPECT_TRUE(one.live);
  EXPECT_GE(one.age_ms, 0);
  EXPECT_LT(one.age_ms, 60000);
  EXPECT_EQ(one.holds, std::vector<std::string>{"a.x"});
  ASSERT_TRUE(one.report);
  EXPECT_EQ(one.report->version, "1.2.3");
  EXPECT_EQ(one.report->started_ms, 1700000000000);
  ASSERT_EQ(one.report->units.size(), 1u);
  const unit_report& back = one.report->units[0];
  EXPECT_EQ(back.unit, "a.x");
  EXPECT_FALSE(back.streaming);
  EXPECT_EQ(back.state, u.state);
  EXPECT_DOUBLE_EQ(back.lag_seconds, 1.5);
  EXPECT_EQ(back.applied_through, u.applied_through);
  EXPECT_DOUBLE_EQ(back.events_per_second, 250);
  EXPECT_EQ(back.last_event_ms, 1700000000123);
  EXPECT_EQ(back.errors, 3);
  EXPECT_EQ(back.lag, u.lag);
  EXPECT_FALSE((*rows)[1].live);
  // Only a live holder's report counts, and the lease's owner's when one is named.
  EXPECT_EQ(report_of(*rows, "a.x", ""), &back);
  EXPECT_EQ(report_of(*rows, "a.x", "one"), &back);
  EXPECT_EQ(report_of(*rows, "a.x", "two"), nullptr);
  EXPECT_EQ(report_of(*rows, "a.y", ""), nullptr);
  expire();
  rows = store_->instances();
  ASSERT_TRUE(rows);
  EXPECT_EQ(report_of(*rows, "a.x", ""), nullptr);
}

TEST(unit_report, reading_is_lenient_about_fields_it_does_not_know_or_of_the_wrong_type) {
  const bson::document odd{
      {"version", 7},
      {"units", bson::array{bson::document{{"unit", "a.x"},
                                           {"lagSeconds", "soon"},
                                           {"lag", bson::array{1, bson::array{2}}},
                                           {"future", true}},
                            "not a document"}}};
  const instance_report r = instance_report_of(odd);
  EXPECT_EQ(r.version, "");
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].unit, "a.x");
  EXPECT_EQ(r.units[0].lag_seconds, 0);
  EXPECT_TRUE(r.units[0].lag.empty());
}

}  // namespace
}  // namespace denormd::lease
