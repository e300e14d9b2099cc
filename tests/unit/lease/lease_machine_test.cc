// The lease state machine: who should own what (an even share each, the fewest moves, the rest
// by rendezvous score), and what an instance does with each unit given the time, the live
// instances and the lease table.
#include "lease/lease_machine.h"

#include <gtest/gtest.h>

#include <map>

namespace denormd::lease {
namespace {

using kind = lease_action::kind;

std::vector<std::string> units(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("shop.c" + std::to_string(i));
  return out;
}

TEST(lease_machine_test, rendezvous_moves_only_the_units_a_joining_or_leaving_instance_wins) {
  EXPECT_EQ(owner_of("shop.c", {}), "");
  const std::vector<std::string> abc{"a", "b", "c"};
  std::map<std::string, int> per;
  for (const auto& u : units(300)) {
    const std::string owner = owner_of(u, abc);
    ++per[owner];
    EXPECT_EQ(owner_of(u, {"c", "a", "b"}), owner) << "order of the live list matters";
    const std::string with_d = owner_of(u, {"a", "b", "c", "d"});
    EXPECT_TRUE(with_d == owner || with_d == "d") << u;
    const std::string without_c = owner_of(u, {"a", "b"});
    if (owner != "c") {
      EXPECT_EQ(without_c, owner) << u;
    }
  }
  ASSERT_EQ(per.size(), 3u);
  for (const auto& [instance, n] : per)
    EXPECT_GT(n, 70) << instance << " got " << n << " of 300";
}

// Holdings as a table would say them.
std::vector<lease_row> table_of(const std::map<std::string, std::string>& owners) {
  std::vector<lease_row> out;
  for (const auto& [unit, owner] : owners)
    out.push_back({unit, owner, 1, false});
  return out;
}

std::map<std::string, std::size_t> loads(const std::map<std::string, std::string>& owners) {
  std::map<std::string, std::size_t> out;
  for (const auto& [unit, owner] : owners)
    ++out[owner];
  return out;
}

std::size_t moved(const std::map<std::string, std::string>& before,
                  const std::map<std::string, std::string>& after) {
  std::size_t n = 0;
  for (const auto& [unit, owner] : after) {
    const auto it = before.find(unit);
    n += it == before.end() || it->second != owner;
  }
  return n;
}

TEST(lease_machine_test, units_are_shared_within_one_of_each_other_and_move_as_few_as_they_can) {
  EXPECT_TRUE(assign_units(units(3), {}, {}).empty());
  for (int n : {6, 7, 13}) {
    const auto all = units(n);
    // One instance takes everything; each joining one takes its share from those over theirs.
    auto owners = assign_units(all, {"a"}, {});
    EXPECT_EQ(loads(owners)["a"], std::size_t(n));
    std::vector<std::string> live{"a"};
    for (const char* joining : {"b", "c", "d"}) {
      live.push_back(joining);
      auto next = assign_units(all, live, table_of(owners));
      const auto l = loads(next);
      std::size_t lo = SIZE_MAX, hi = 0;
      for (const auto& m : live) {
        lo = std::min(lo, l.count(m) ? l.at(m) : 0);
        hi = std::max(hi, l.count(m) ? l.at(m) : 0);
      }
      EXPECT_LE(hi - lo, 1u) << n << " units on " << live.size();
      // Only the joining instance's share moved, each unit once.
      EXPECT_EQ(moved(owners, next), l.at(joining)) << n << " units, " << joining << " joins";
      // The same whatever the order of the live list.
      std::vector<std::string> reversed(live.rbegin(), live.rend());
      EXPECT_EQ(assign_units(all, reversed, table_of(owners)), next);
      owners = next;
    }
    // One leaves: only its units move.
    auto without_b = assign_units(all, {"a", "c", "d"}, table_of(owners));
    EXPECT_EQ(moved(owners, without_b), loads(owners)["b"]) << n;
    // Six on two: three each.
  }
  const auto six = assign_units(units(6), {"x", "y"}, {});
  EXPECT_EQ(loads(six), (std::map<std::string, std::size_t>{{"x", 3}, {"y", 3}}));
}

// The automatic backfill is a unit too, but not a stream: the streams are spread on their own,
// so six namespaces on two instances are 3:3 however the backfill falls.
TEST(lease_machine_test, streams_are_spread_apart_from_jobs) {
  const std::vector<std::string> all{"shop.customers", "shop.hosts",    "shop.logmsgs",
                                     "shop.orders",    "shop.products", "shop.reviews",
                                     "auto-backfill"};
  auto streams_of = [](const std::map<std::string, std::string>& owners) {
    std::map<std::string, std::size_t> out;
    for (const auto& [unit, owner] : owners) {
      if (unit.find('.') != std::string::npos) ++out[owner];
    }
    return out;
  };
  for (const char* first : {"a", "b", "x", "instance-1"}) {
    const auto alone = assign_units(all, {first}, {});
    const auto two = assign_units(all, {first, "z"}, table_of(alone));
    EXPECT_EQ(streams_of(two), (std::map<std::string, std::size_t>{{first, 3}, {"z", 3}})) << first;
    EXPECT_EQ(moved(alone, two), loads(two)["z"]);
    EXPECT_EQ(streams_of(assign_units(all, {first, "z"}, {})),
              (std::map<std::string, std::size_t>{{first, 3}, {"z", 3}}));
  }
}

TEST(lease_machine_test, a_lone_instance_takes_every_free_expired_released_or_own_lease) {
  lease_machine m("me", {"u1", "u2", "u3", "u4", "u5"}, 10000, 2000);
  const std::vector<lease_row> table{{"u2", "other", 3, true},    // expired
                                     {"u3", "", 4, false},        // released
                                     {"u4", "me", 5, false},      // ours, from an earlier life
                                     {"u5", "other", 6, false}};  // held by a live peer
  const auto actions = m.decide(0, {}, table, false);
  EXPECT_EQ(actions, (std::vector<lease_action>{{kind::acquire, "u1", 0},
                                                {kind::acquire, "u2", 0},
                                                {kind::acquire, "u3", 0},
                                                {kind::acquire, "u4", 0}}));
}

TEST(lease_machine_test, a_new_unit_set_is_decided_on_and_a_unit_left_out_is_the_callers) {
  lease_machine m("me", {"u1", "u2"}, 10000, 2000);
  m.acquired("u1", 1, 0);
  m.set_units({"u3", "u1"});
  // u1 is renewed, u3 taken; u2 is no longer shared.
  EXPECT_EQ(m.decide(100, {}, {}, false),
            (std::vector<lease_action>{{kind::renew, "u1", 1}, {kind::acquire, "u3", 0}}));
  m.set_units({"u3"});
  // u1 is still held (the caller releases it) but nothing is decided for it any more.
  EXPECT_EQ(m.decide(100, {}, {}, false), (std::vector<lease_action>{{kind::acquire, "u3", 0}}));
  EXPECT_TRUE(m.deadline("u1").has_value());
}

TEST(lease_machine_test, only_the_units_it_should_own_are_taken) {
  const std::vector<std::string> live{"a", "b"};
  lease_machine a("a", units(20), 10000, 2000);
  const auto owners = assign_units(units(20), live, {});
  const auto actions = a.decide(0, live, {}, false);
  for (const auto& act : actions) {
    EXPECT_EQ(act.what, kind::acquire);
    EXPECT_EQ(owners.at(act.unit), "a") << act.unit;
  }
  EXPECT_EQ(actions.size(), 10u);
}

TEST(lease_machine_test, a_held_lease_is_renewed_until_its_deadline_then_dropped) {
  lease_machine m("me", {"u"}, 10000, 2000);
  m.acquired("u", 7, 1000);
  EXPECT_EQ(m.deadline("u"), 9000);  // sent + TTL - margin
  EXPECT_EQ(m.decide(5000, {"me"}, {}, false), (std::vector<lease_action>{{kind::renew, "u", 7}}));
  m.renewed("u", 5000);
  EXPECT_EQ(m.deadline("u"), 13000);
  EXPECT_EQ(m.decide(12999, {"me"}, {}, false), (std::vector<lease_action>{{kind::renew, "u", 7}}));
  // Not renewed in time: stop writing before the server can give it to anyone else.
  EXPECT_EQ(m.decide(13000, {"me"}, {}, false), (std::vector<lease_action>{{kind::drop, "u", 7}}));
  m.dropped("u");
  EXPECT_FALSE(m.deadline("u").has_value());
  EXPECT_TRUE(m.held().empty());
}

TEST(lease_machine_test, leases_are_released_to_a_joining_owner_and_all_at_a_stop) {
  const auto all = units(30);
  lease_machine m("a", all, 10000, 2000);
  for (const auto& u : all)
    m.acquired(u, 1, 0);
  // b joins: a gives up exactly half, and renews the rest.
  std::size_t released = 0;
  for (const auto& act : m.decide(100, {"a", "b"}, {}, false)) {
    if (act.what == kind::release) {
      ++released;
    } else {
      EXPECT_EQ(act.what, kind::renew);
    }
  }
  EXPECT_EQ(released, 15u);
  // Stopping: everything is released, nothing taken.
  for (const auto& act : m.decide(100, {"a"}, {}, true))
    EXPECT_EQ(act.what, kind::release);
  lease_machine idle("b", all, 10000, 2000);
  EXPECT_TRUE(idle.decide(0, {"b"}, {}, true).empty());
}

TEST(lease_machine_test, a_past_deadline_wins_over_a_release) {
  lease_machine m("a", {"u"}, 10000, 2000);
  m.acquired("u", 2, 0);
  EXPECT_EQ(m.decide(9000, {"a"}, {}, true), (std::vector<lease_action>{{kind::drop, "u", 2}}));
}

}  // namespace
}  // namespace denormd::lease

namespace denormd::lease {
namespace {

std::vector<std::string> partitions_of(const std::string& coll, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back(coll + "#" + std::to_string(i) + "/" + std::to_string(n));
  return out;
}

TEST(lease_machine_test, a_unit_names_its_collection_with_or_without_a_partition) {
  EXPECT_EQ(collection_of("shop.logs#2/4"), "shop.logs");
  EXPECT_EQ(collection_of("shop.logs"), "shop.logs");
  EXPECT_EQ(collection_of("shop.a#b/4"), "shop.a#b/4");
  EXPECT_EQ(collection_of("shop.a#1/"), "shop.a#1/");
  EXPECT_EQ(collection_of("auto-backfill"), "auto-backfill");
}

TEST(lease_machine_test, a_namespace_another_live_instance_partitions_otherwise_is_not_taken) {
  // "b" reads shop.logs as 2 partitions; "a" (already streaming it as 4) holds #0/4.
  auto mine = partitions_of("shop.logs", 2);
  mine.push_back("shop.other");
  lease_machine b("b", mine, 3000, 600);
  const std::vector<lease_row> table{{"shop.logs#0/4", "a", 1, false}};
  const auto found = b.conflicts({"a", "b"}, table);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].collection, "shop.logs");
  EXPECT_EQ(found[0].holder, "a");
  EXPECT_EQ(found[0].theirs, "shop.logs#0/4");
  EXPECT_TRUE(found[0].yield);
  for (const auto& a : b.decide(0, {"a", "b"}, table, false))
    EXPECT_EQ(a.unit.rfind("shop.logs", 0), std::string::npos) << a.unit << " taken";
  // A holder that is gone, or a released row, blocks nothing.
  EXPECT_TRUE(b.conflicts({"b"}, table).empty());
  EXPECT_TRUE(b.conflicts({"a", "b"}, {{"shop.logs#0/4", "", 1, false}}).empty());
  EXPECT_TRUE(b.conflicts({"a", "b"}, {{"shop.logs#0/4", "a", 1, true}}).empty());
  // The same layout is no conflict.
  EXPECT_TRUE(b.conflicts({"a", "b"}, {{"shop.logs#1/2", "a", 1, false}}).empty());
}

TEST(lease_machine_test, two_instances_holding_different_layouts_leave_it_to_the_lower_name) {
  // Both took their units in one round: "a" keeps its own, "b" gives its up.
  lease_machine a("a", partitions_of("shop.logs", 4), 3000, 600);
  lease_machine b("b", partitions_of("shop.logs", 2), 3000, 600);
  a.acquired("shop.logs#0/4", 1, 0);
  b.acquired("shop.logs#0/2", 1, 0);
  const std::vector<lease_row> table{{"shop.logs#0/4", "a", 1, false},
                                     {"shop.logs#0/2", "b", 1, false}};
  const std::vector<std::string> live{"a", "b"};
  bool a_keeps = false;
  for (const auto& act : a.decide(10, live, table, false)) {
    if (act.unit == "shop.logs#0/4") a_keeps = act.what == lease_action::kind::renew;
  }
  EXPECT_TRUE(a_keeps);
  bool b_releases = false;
  for (const auto& act : b.decide(10, live, table, false)) {
    if (act.unit == "shop.logs#0/2") b_releases = act.what == lease_action::kind::release;
    EXPECT_NE(act.what, lease_action::kind::acquire) << act.unit;
  }
  EXPECT_TRUE(b_releases);
  EXPECT_FALSE(a.conflicts(live, table).front().yield);
  EXPECT_TRUE(b.conflicts(live, table).front().yield);
}

}  // namespace
}  // namespace denormd::lease

namespace denormd::lease {
namespace {

TEST(lease_machine_test, each_namespaces_partitions_spread_evenly_whatever_the_other_units) {
  // Five namespaces, the backfill and a namespace read as 4 partitions, on 2 then 3 instances.
  std::vector<std::string> all{"shop.a", "shop.b", "shop.c", "shop.d", "shop.e", "auto-backfill"};
  for (int i = 0; i < 4; ++i)
    all.push_back("shop.logs#" + std::to_string(i) + "/4");
  for (const std::vector<std::string>& live :
       {std::vector<std::string>{"x", "y"}, std::vector<std::string>{"x", "y", "z"}}) {
    const auto owners = assign_units(all, live, {});
    std::map<std::string, int> parts;
    std::map<std::string, int> streams;
    for (const auto& [unit, owner] : owners) {
      if (unit.find('#') != std::string::npos) ++parts[owner];
      if (unit.find('.') != std::string::npos && unit.find('#') == std::string::npos)
        ++streams[owner];
    }
    for (const auto& m : live) {
      EXPECT_GE(parts[m], 4 / static_cast<int>(live.size())) << m;
      EXPECT_LE(parts[m], 4 / static_cast<int>(live.size()) + 1) << m;
      EXPECT_GE(streams[m], 5 / static_cast<int>(live.size())) << m;
    }
  }
}

}  // namespace
}  // namespace denormd::lease
