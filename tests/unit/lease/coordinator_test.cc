// The coordinator's rounds against an in-memory lease table: what it takes, renews, gives
// up and drops, what it asks the daemon to start and stop, and how it fences checkpoints.
#include "lease/coordinator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "common/clock.h"

namespace denormd::lease {
namespace {

// The lease table as MongoDB would keep it, without the clock: a test expires a row by hand.
class memory_table final : public lease_table {
 public:
  struct row {
    std::string owner;
    std::int64_t epoch = 0;
    bool expired = false;
  };
  std::map<std::string, row> rows;
  std::vector<std::string> live_list;
  bool renewals_fail = false;
  int heartbeats = 0;
  bson::document last_report;
  bool left = false;
  std::vector<std::string> calls;             // "acquire <unit>", "renew <unit>"
  std::chrono::milliseconds acquire_time{0};  // how long each acquisition takes

  mongo::result<std::optional<std::int64_t>> acquire(const std::string& unit,
                                                     const std::string& me) override {
    calls.push_back("acquire " + unit);
    std::this_thread::sleep_for(acquire_time);
    row& r = rows[unit];
    if (!r.owner.empty() && !r.expired && r.owner != me) return std::optional<std::int64_t>{};
    r = row{me, r.epoch + 1, false};
    return std::optional<std::int64_t>{r.epoch};
  }
  mongo::result<bool> renew(const std::string& unit, const std::string& me,
                            std::int64_t epoch) override {
    calls.push_back("renew " + unit);
    if (renewals_fail)
      return mongo::failure(
          mongo::driver_error{mongo::driver_error::origin::network, 0, "down", {}});
    const row& r = rows[unit];
    return r.owner == me && r.epoch == epoch;
  }
  mongo::result<bool> raise_epoch(const std::string& unit, const std::string& me, std::int64_t from,
                                  std::int64_t to) override {
    row& r = rows[unit];
    if (r.owner != me || r.epoch != from) return false;
    r.epoch = to;
    return true;
  }
  mongo::status release(const std::string& unit, const std::string& me,
                        std::int64_t epoch) override {
    row& r = rows[unit];
    if (r.owner == me && r.epoch == epoch) r.owner.clear();
    return {};
  }
  mongo::status heartbeat(const std::string&, const std::vector<std::string>&,
                          const bson::document& report) override {
    ++heartbeats;
    last_report = report;
    return {};
  }
  mongo::status leave(const std::string&) override {
    left = true;
    return {};
  }
  mongo::result<std::vector<std::string>> live() override { return live_list; }
  mongo::result<std::vector<lease_entry>> table() override {
    std::vector<lease_entry> out;
    for (const auto& [unit, r] : rows)
      out.push_back(
          lease_entry{lease_row{unit, r.owner, r.epoch, r.expired}, 0, r.expired ? 0 : 5000});
    return out;
  }
};

std::vector<std::string> twelve_units() {
  std::vector<std::string> units;
  for (int i = 0; i < 12; ++i)
    units.push_back("s.c" + std::to_string(i));
  return units;
}

class coordinator_test : public ::testing::Test {
 protected:
  coordinator_test() : metrics_("test") {
    table_.live_list = {"a"};
    hooks_.start = [this](const std::string& unit, const lease_grant& g) { started_[unit] = g; };
    hooks_.stop = [this](const std::string& unit, bool release) {
      stopped_.push_back(unit + (release ? " release" : " drop"));
    };
    hooks_.fence = [this](const std::string& unit, std::int64_t epoch,
                          bool taken_over) -> mongo::result<std::int64_t> {
      fenced_.push_back(unit + " " + std::to_string(epoch));
      if (taken_over) taken_over_.push_back(unit);
      if (fence_fails_)
        return mongo::failure(
            mongo::driver_error{mongo::driver_error::origin::network, 0, "down", {}});
      return std::max(epoch, checkpoint_epoch_);
    };
  }
  coordinator& make(std::vector<std::string> units,
                    std::chrono::milliseconds ttl = std::chrono::seconds(10)) {
    c_ = std::make_unique<coordinator>(table_, metrics_,
                                       coordinator_options{"a", std::move(units), ttl}, hooks_);
    return *c_;
  }
  // The units `who` should hold among `live`, as the lease table is now.
  std::vector<std::string> share_of(const std::string& who, std::vector<std::string> units,
                                    const std::vector<std::string>& live) {
    std::sort(units.begin(), units.end());
    std::vector<lease_row> rows;
    for (const auto& [unit, r] : table_.rows)
      rows.push_back({unit, r.owner, r.epoch, r.expired});
    std::vector<std::string> out;
    for (const auto& [unit, owner] : assign_units(units, live, rows)) {
      if (owner == who) out.push_back(unit);
    }
    return out;
  }
  double metric(const std::string& line_start) {
    const std::string text = metrics_.serialize();
    const auto at = text.find("\n" + line_start);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + 1 + line_start.size()));
  }

  memory_table table_;
  metrics::metrics metrics_;
  unit_hooks hooks_;
  std::map<std::string, lease_grant> started_;
  std::vector<std::string> stopped_;
  std::vector<std::string> fenced_;
  bool fence_fails_ = false;
  std::int64_t checkpoint_epoch_ = 0;
  std::vector<std::string> taken_over_;  // fenced as taken from a holder that did not release
  std::unique_ptr<coordinator> c_;
};

TEST_F(coordinator_test, a_round_takes_the_free_units_fences_their_checkpoints_and_starts_them) {
  auto& c = make({"s.x", "s.y"});
  const std::int64_t before = steady_ms();
  c.round();
  EXPECT_EQ(table_.heartbeats, 1);
  EXPECT_EQ(fenced_, (std::vector<std::string>{"s.x 1", "s.y 1"}));
  ASSERT_EQ(started_.size(), 2u);
  EXPECT_EQ(started_["s.x"].epoch, 1);
  // Writable until the renewal sent + TTL - TTL/5.
  EXPECT_GE(started_["s.x"].deadline->load(), before + 8000);
  EXPECT_LE(started_["s.x"].deadline->load(), steady_ms() + 8000);
  EXPECT_EQ(c.held_units(), (std::vector<std::string>{"s.x", "s.y"}));
  EXPECT_EQ(metric("denormd_lease_held{unit=\"s.x\"} "), 1);
  EXPECT_EQ(metric("denormd_lease_changes_total{reason=\"acquired\"} "), 2);
  EXPECT_EQ(metric("denormd_instances "), 1);
  // The next round renews: nothing started again.
  c.round();
  EXPECT_EQ(started_.size(), 2u);
  EXPECT_EQ(table_.rows["s.x"].epoch, 1);
}

TEST_F(coordinator_test, every_heartbeat_carries_the_report_made_for_it) {
  int asked = 0;
  hooks_.report = [&asked] {
    ++asked;
    return bson::document{{"round", asked}};
  };
  auto& c = make({"s.x"});
  c.round();
  EXPECT_EQ(table_.last_report, (bson::document{{"round", 1}}));
  c.round();
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(table_.last_report, (bson::document{{"round", 2}}));
}

TEST_F(coordinator_test, a_unit_given_up_is_released_only_once_the_daemon_stopped_it) {
  const std::vector<std::string> units = twelve_units();
  auto& c = make(units);
  c.round();
  ASSERT_EQ(c.held_units().size(), 12u);
  table_.live_list = {"a", "b"};  // b joins
  std::vector<std::string> expected;
  for (const auto& u : share_of("b", units, {"a", "b"}))
    expected.push_back(u + " release");
  ASSERT_EQ(expected.size(), 6u);  // half
  c.round();
  std::sort(expected.begin(), expected.end());  // units go in name order
  EXPECT_EQ(stopped_, expected);
  // Still held and renewed until the daemon says the pipeline stopped; asked only once.
  c.round();
  EXPECT_EQ(stopped_, expected);
  const std::string first = expected.front().substr(0, expected.front().find(' '));
  EXPECT_EQ(table_.rows[first].owner, "a");
  c.released(first);
  EXPECT_EQ(table_.rows[first].owner, "");
  EXPECT_EQ(c.held_units().size(), 11u);
  EXPECT_EQ(started_[first].deadline->load(), 0);
  EXPECT_EQ(metric("denormd_lease_changes_total{reason=\"released\"} "), 1);
}

TEST_F(coordinator_test, a_unit_stolen_while_being_given_up_is_given_up_again_next_time) {
  const std::vector<std::string> units = twelve_units();
  auto& c = make(units);
  c.round();
  const std::string moving = share_of("b", units, {"a", "b"}).back();  // a unit b gets
  table_.live_list = {"a", "b"};
  table_.rows[moving] = {"other", 9, false};  // taken just before a gives it up
  c.round();
  EXPECT_EQ(std::count(stopped_.begin(), stopped_.end(), moving + " drop"), 1);
  EXPECT_EQ(std::count(stopped_.begin(), stopped_.end(), moving + " release"), 0);
  c.released(moving);  // a stop the daemon finished late changes nothing
  // Later a holds it again, and b comes back: it is given up again.
  table_.live_list = {"a"};
  table_.rows[moving].expired = true;
  c.round();
  ASSERT_TRUE(started_.contains(moving));
  table_.live_list = {"a", "b"};
  stopped_.clear();
  c.round();
  EXPECT_EQ(std::count(stopped_.begin(), stopped_.end(), moving + " release"), 1);
}

TEST_F(coordinator_test, a_lease_found_taken_is_stolen_and_its_writers_fenced_at_once) {
  auto& c = make({"s.x"});
  c.round();
  table_.rows["s.x"] = {"other", 2, false};  // expired on the server and taken meanwhile
  c.round();
  EXPECT_EQ(stopped_, (std::vector<std::string>{"s.x drop"}));
  EXPECT_EQ(started_["s.x"].deadline->load(), 0);
  EXPECT_TRUE(c.held_units().empty());
  EXPECT_EQ(metric("denormd_lease_changes_total{reason=\"stolen\"} "), 1);
  c.round();  // held by a live owner: not taken back
  EXPECT_EQ(table_.rows["s.x"].owner, "other");
}

TEST_F(coordinator_test, renewals_come_first_and_slow_acquisitions_end_the_round_at_ttl_over_3) {
  // A row that another holder's open transaction wrote holds an acquisition up to its
  // statement's time limit; the leases held must be renewed whatever it costs.
  auto& c = make({"s.x", "s.y"}, std::chrono::milliseconds(300));
  c.round();
  table_.calls.clear();
  c.set_units({"s.0", "s.1", "s.2", "s.x", "s.y"});  // three new units, listed first
  table_.acquire_time = std::chrono::milliseconds(60);
  c.round();
  // 100 ms a round: the third acquisition is left to the next one.
  EXPECT_EQ(table_.calls,
            (std::vector<std::string>{"renew s.x", "renew s.y", "acquire s.0", "acquire s.1"}));
  table_.calls.clear();
  table_.acquire_time = std::chrono::milliseconds(0);
  c.round();
  EXPECT_EQ(table_.calls, (std::vector<std::string>{"renew s.0", "renew s.1", "renew s.x",
                                                    "renew s.y", "acquire s.2"}));
}

TEST_F(coordinator_test, a_lease_its_holder_did_not_release_is_fenced_as_a_takeover) {
  // "b" held two units and is gone (killed or paused): its leases expired. A third was released
  // (a clean stop), a fourth never held.
  std::vector<std::string> units = {"s.w", "s.x", "s.y", "s.z"};
  table_.rows["s.w"] = {"b", 3, true};
  table_.rows["s.x"] = {"b", 5, true};
  table_.rows["s.y"] = {"", 2, true};
  auto& c = make(units);
  c.round();
  // Its open transactions are ended before the mark (the daemon's hook does it): only where the
  // holder did not let go.
  EXPECT_EQ(taken_over_, (std::vector<std::string>{"s.w", "s.x"}));
  EXPECT_EQ(table_.rows["s.w"].owner, "a");
  EXPECT_EQ(fenced_, (std::vector<std::string>{"s.w 4", "s.x 6", "s.y 3", "s.z 1"}));
}

TEST_F(coordinator_test, drain_does_not_wait_for_a_round_in_flight) {
  table_.acquire_time = std::chrono::milliseconds(300);
  auto& c = make({"s.x", "s.y", "s.z"}, std::chrono::seconds(30));
  std::thread round([&] { c.round(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  c.drain();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  round.join();
  // Once draining, the round took nothing more.
  EXPECT_EQ(std::count_if(table_.calls.begin(), table_.calls.end(),
                          [](const std::string& s) { return s.starts_with("acquire"); }),
            1);
}

TEST_F(coordinator_test, a_failed_renewal_keeps_the_deadline_it_had) {
  auto& c = make({"s.x"});
  c.round();
  const std::int64_t deadline = started_["s.x"].deadline->load();
  table_.renewals_fail = true;
  c.round();
  EXPECT_EQ(started_["s.x"].deadline->load(), deadline);
  EXPECT_TRUE(stopped_.empty());
  EXPECT_NE(metrics_.serialize().find("denormd_errors_total{code=\"network\",stage=\"lease\"} 1"),
            std::string::npos);
}

TEST_F(coordinator_test, a_checkpoint_marked_by_a_newer_epoch_than_the_table_is_passed) {
  checkpoint_epoch_ = 1000;  // the lease table was lost; the checkpoint kept its epoch
  auto& c = make({"s.x"});
  c.round();
  EXPECT_EQ(fenced_, (std::vector<std::string>{"s.x 1", "s.x 1001"}));
  EXPECT_EQ(started_["s.x"].epoch, 1001);
  EXPECT_EQ(table_.rows["s.x"].epoch, 1001);
}

TEST_F(coordinator_test, a_checkpoint_that_cannot_be_marked_gives_the_lease_back) {
  fence_fails_ = true;
  auto& c = make({"s.x"});
  c.round();
  EXPECT_TRUE(started_.empty());
  EXPECT_TRUE(c.held_units().empty());
  EXPECT_EQ(table_.rows["s.x"].owner, "");
  fence_fails_ = false;
  c.round();  // the next round takes it
  EXPECT_EQ(started_["s.x"].epoch, 2);
}

TEST_F(coordinator_test, new_units_are_taken_and_units_no_longer_shared_released_at_once) {
  auto& c = make({"s.x", "s.y"});
  c.round();
  ASSERT_EQ(c.held_units(), (std::vector<std::string>{"s.x", "s.y"}));
  // A reload watches s.z instead of s.y (whose pipeline the daemon stopped already).
  c.set_units({"s.x", "s.z"});
  EXPECT_EQ(c.held_units(), (std::vector<std::string>{"s.x"}));
  EXPECT_EQ(table_.rows["s.y"].owner, "");
  EXPECT_EQ(started_["s.y"].deadline->load(), 0);
  EXPECT_TRUE(stopped_.empty());  // nothing to ask the daemon: it stopped s.y itself
  EXPECT_EQ(metric("denormd_lease_changes_total{reason=\"released\"} "), 1);
  EXPECT_EQ(metric("denormd_lease_held{unit=\"s.y\"} "), -1);  // its series went
  EXPECT_EQ(metric("denormd_lease_held{unit=\"s.z\"} "), 0);   // declared, not yet held
  c.round();
  EXPECT_EQ(c.held_units(), (std::vector<std::string>{"s.x", "s.z"}));
  EXPECT_EQ(fenced_.back(), "s.z 1");
  EXPECT_EQ(table_.rows["s.y"].owner, "");  // not taken again
  // A unit being given up when it stops being shared is released once, and a late
  // released() from the daemon changes nothing.
  std::vector<std::string> units = twelve_units();
  c.set_units(units);
  c.round();
  table_.live_list = {"a", "b"};  // b joins: a gives b's units up
  const std::string giving_up = share_of("b", units, {"a", "b"}).back();
  c.round();
  ASSERT_EQ(table_.rows[giving_up].owner, "a");
  ASSERT_NE(std::find(stopped_.begin(), stopped_.end(), giving_up + " release"), stopped_.end());
  std::erase(units, giving_up);
  c.set_units(units);
  EXPECT_EQ(table_.rows[giving_up].owner, "");
  const double released = metric("denormd_lease_changes_total{reason=\"released\"} ");
  c.released(giving_up);
  EXPECT_EQ(metric("denormd_lease_changes_total{reason=\"released\"} "), released);
}

TEST_F(coordinator_test, draining_takes_nothing_and_release_all_releases_everything) {
  auto& c = make({"s.x", "s.y"});
  table_.rows["s.y"] = {"other", 4, false};
  c.round();
  EXPECT_EQ(c.held_units(), (std::vector<std::string>{"s.x"}));
  c.drain();
  table_.rows["s.y"].expired = true;  // free now, but a draining instance does not take it
  c.round();
  EXPECT_EQ(c.held_units(), (std::vector<std::string>{"s.x"}));
  c.release_all();
  EXPECT_TRUE(c.held_units().empty());
  EXPECT_EQ(table_.rows["s.x"].owner, "");
  EXPECT_TRUE(table_.left);
}

}  // namespace
}  // namespace denormd::lease
