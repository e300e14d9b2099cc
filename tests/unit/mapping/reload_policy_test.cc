#include "mapping/reload_policy.h"

#include <gtest/gtest.h>

#include "test_helpers.h"

// The cases tests/integration/test_reload.py and test_ha_reload.py run against a daemon, decided
// here without one: which pipelines move, where removed mappings stopped, where put back ones
// replay from.

namespace denormd::mapping {
namespace {

using kind = namespace_move::kind;

const ns customers{"shop", "customers"};
const ns products{"shop", "products"};

// a and b read customers (into orders and invoices); p reads products.
std::string copy_of(const std::string& name, const std::string& source, const std::string& target,
                    const std::string& field = "name") {
  return R"({"name":")" + name + R"(","kind":"copy","source":{"collection":")" + source +
         R"("},"target":{"collection":")" + target + R"(","key":"c"},"fields":{"n":")" + field +
         R"("}})";
}

planner set_of(const std::vector<std::string>& jsons) {
  std::vector<mapping> ms;
  for (const auto& j : jsons) {
    auto one = testing::load(j);
    ms.push_back(std::move(one.front()));
  }
  return planner(std::move(ms));
}

const std::string a = copy_of("a", "customers", "orders");
const std::string b = copy_of("b", "customers", "invoices");
const std::string b_changed = copy_of("b", "customers", "invoices", "email");
const std::string p = copy_of("p", "products", "lines");

bson::document token(const std::string& data) {
  return bson::document{{"_data", bson::value(data)}};
}

resume_position at(const std::string& data) {
  return resume_position{token(data), std::nullopt, std::nullopt, "", std::nullopt};
}

std::string fingerprint_of(const planner& s, const std::string& name) {
  for (const auto& m : s.mappings()) {
    if (m.name == name) return m.fingerprint();
  }
  return "";
}

TEST(reload_policy_test, compare_names_what_was_added_changed_and_removed) {
  EXPECT_EQ(compare(set_of({a, b}), set_of({a, b_changed, p})), (set_change{{"p"}, {"b"}, {}}));
  EXPECT_EQ(compare(set_of({a, b, p}), set_of({a})), (set_change{{}, {}, {"b", "p"}}));
  EXPECT_TRUE(compare(set_of({a, b}), set_of({b, a})).empty());
}

TEST(reload_policy_test, a_changed_mapping_hands_its_namespace_over_and_keeps_the_others) {
  const std::vector<ns> watched{customers, products};
  EXPECT_EQ(namespace_moves(watched, set_of({a, b, p}), set_of({a, b_changed, p}), false),
            (std::vector<namespace_move>{{customers, kind::hand_over}, {products, kind::keep}}));
}

TEST(reload_policy_test, a_namespace_no_longer_watched_stops_first_and_a_new_one_starts) {
  EXPECT_EQ(namespace_moves({customers}, set_of({a}), set_of({p}), false),
            (std::vector<namespace_move>{{customers, kind::stop}, {products, kind::start}}));
  // Removing one of two mappings of a namespace changes its stream.
  EXPECT_EQ(namespace_moves({customers}, set_of({a, b}), set_of({a}), false),
            (std::vector<namespace_move>{{customers, kind::hand_over}}));
}

TEST(reload_policy_test, with_ha_a_newly_watched_namespace_waits_for_its_lease) {
  EXPECT_EQ(namespace_moves({customers}, set_of({a}), set_of({p}), true),
            (std::vector<namespace_move>{{customers, kind::stop}}));
  EXPECT_EQ(namespace_moves({}, set_of({}), set_of({a}), true), std::vector<namespace_move>{});
}

stopped_mapping entry(const planner& s, const std::string& name, const std::string& data) {
  return stopped_mapping{name, fingerprint_of(s, name), token(data), std::nullopt, ""};
}

TEST(reload_policy_test, removed_then_put_back_replays_from_its_entry_once) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy(false);
  policy.begin(both, only_a);
  // Its namespace's pipeline stopped at 20: the entry is stored with the checkpoint.
  const settled gone = policy.settle(at("20"), customers, only_a, {});
  EXPECT_EQ(gone.entries, std::vector<stopped_mapping>{entry(both, "b", "20")});
  EXPECT_TRUE(gone.store);
  EXPECT_FALSE(gone.replayed);
  EXPECT_EQ(gone.from, at("20"));
  policy.running(only_a);
  // The pipeline after it moves the checkpoint on; the entry stays as it was.
  EXPECT_FALSE(policy.settle(at("35"), customers, only_a, gone.entries).store);

  // Put back while a's pipeline applied up to 50: the stream goes back to 20, and a skips to 50.
  policy.begin(only_a, both);
  const settled back = policy.settle(at("50"), customers, both, gone.entries);
  ASSERT_TRUE(back.replayed);
  EXPECT_TRUE(back.replayed->rewound);
  EXPECT_EQ(back.replayed->mappings, std::vector<std::string>{"b"});
  EXPECT_EQ(back.from.resume_after, token("20"));
  EXPECT_EQ(back.from.gate, (replay_gate{"50", {{"b", "20"}}}));
  EXPECT_TRUE(back.entries.empty());
  EXPECT_TRUE(back.store);
  // Its entry is used up: settled again with what was stored, nothing replays.
  policy.running(both);
  EXPECT_FALSE(policy.settle(at("50"), customers, both, back.entries).replayed);
}

TEST(reload_policy_test, with_ha_each_partition_of_a_namespace_a_removed_mapping_read_stops_it) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy(true);
  policy.begin(both, only_a);
  for (int i = 0; i < 2; ++i) {
    const ns part{"shop", "customers", partition{i, 2}};
    const settled gone = policy.settle(at("2" + std::to_string(i)), part, only_a, {});
    EXPECT_EQ(gone.entries, std::vector<stopped_mapping>{entry(both, "b", "2" + std::to_string(i))})
        << part.unit();
  }
}

TEST(reload_policy_test, put_back_changed_drops_its_entry_without_a_replay) {
  const planner both = set_of({a, b}), changed = set_of({a, b_changed});
  for (const bool ha : {false, true}) {
    reload_policy policy(ha);
    const settled s = policy.settle(at("70"), customers, changed, {entry(both, "b", "40")});
    EXPECT_FALSE(s.replayed);
    EXPECT_TRUE(s.entries.empty());
    EXPECT_TRUE(s.store);
    EXPECT_EQ(s.from, at("70"));
  }
}

TEST(reload_policy_test, a_removed_mapping_whose_pipeline_applied_nothing_has_no_stop_point) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy(false);
  policy.begin(both, only_a);
  const settled s = policy.settle(resume_position{}, customers, only_a, {});
  EXPECT_EQ(s.unknown, std::vector<std::string>{"b"});
  EXPECT_TRUE(s.entries.empty());
  EXPECT_FALSE(s.store);
  policy.running(only_a);
  // A later position is not where it stopped: without --ha it never gets an entry.
  EXPECT_TRUE(policy.settle(at("50"), customers, only_a, {}).entries.empty());
  EXPECT_TRUE(policy.settle(at("50"), customers, only_a, {}).unknown.empty());
}

TEST(reload_policy_test, put_back_where_nothing_was_applied_starts_at_its_entry_ungated) {
  const planner both = set_of({a, b});
  resume_position now;
  now.start_at = bson::timestamp{7, 1};
  const settled s = reload_policy(false).settle(now, customers, both, {entry(both, "b", "20")});
  ASSERT_TRUE(s.replayed);
  EXPECT_TRUE(s.replayed->rewound);
  EXPECT_EQ(s.from.resume_after, token("20"));
  EXPECT_FALSE(s.from.start_at);
  EXPECT_FALSE(s.from.gate);
  EXPECT_TRUE(s.store);
}

TEST(reload_policy_test, the_earliest_stop_point_wins_and_an_existing_gate_keeps_the_earliest) {
  std::map<std::string, stop_point, std::less<>> back{
      {"b", {customers, token("30"), std::nullopt, "fb"}},
      {"c", {customers, token("20"), std::nullopt, "fc"}}};
  resume_position base = at("50");
  base.gate = replay_gate{"45", {{"c", "10"}}};
  const replay r = replay_from(base, back);
  EXPECT_TRUE(r.rewound);
  EXPECT_EQ(r.from.resume_after, token("20"));
  EXPECT_EQ(r.from.filter, "fc");
  EXPECT_EQ(r.from.gate, (replay_gate{"45", {{"b", "30"}, {"c", "10"}}}));
  // A stop point after the base only gates: the stream does not go back.
  const replay later = replay_from(at("10"), {{"b", {customers, token("30"), std::nullopt, ""}}});
  EXPECT_FALSE(later.rewound);
  EXPECT_EQ(later.from.resume_after, token("10"));
  EXPECT_EQ(later.from.gate, (replay_gate{"10", {{"b", "30"}}}));
}

TEST(reload_policy_test, removed_across_a_restart_stopped_at_its_namespaces_checkpoints) {
  const planner only_a = set_of({a}), both = set_of({a, b});
  // b ran last time and is gone now; p was removed by a denormd that kept where it stopped in
  // denormd_mappings (stoppedAt).
  const std::vector<recorded_mapping> recorded{
      {"a", fingerprint_of(both, "a"), false, {customers}, {}},
      {"b", fingerprint_of(both, "b"), false, {customers}, {}},
      {"p", "fp", true, {products}, {{products, token("05"), std::nullopt, "f"}}}};
  EXPECT_EQ(reload_policy::positions_needed(recorded, only_a),
            (std::vector<ns>{customers, products}));
  const auto entries = reload_policy::entries_at_start(
      recorded, only_a, {{customers, at("30")}, {products, at("40")}});
  EXPECT_EQ(entries, (std::map<ns, std::vector<stopped_mapping>>{
                         {customers, {entry(both, "b", "30")}},
                         {products, {{"p", "fp", token("05"), std::nullopt, "f"}}}}));
  // A namespace whose checkpoint was never stored: where b stopped is unknown.
  EXPECT_EQ(reload_policy::entries_at_start(recorded, only_a, {{customers, resume_position{}}})
                .count(customers),
            0u);
  // Put back at the next start, b replays from its entry.
  reload_policy policy(false);
  policy.start(recorded, both);
  const settled back = policy.settle(at("60"), customers, both, entries.at(customers));
  ASSERT_TRUE(back.replayed);
  EXPECT_EQ(back.from.resume_after, token("30"));
}

TEST(reload_policy_test, with_ha_a_removed_mapping_put_back_on_another_instance_replays) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy here(true);
  here.begin(both, only_a);
  const settled gone = here.settle(at("40"), customers, only_a, {});
  const std::vector<stopped_mapping> stored{entry(both, "b", "40")};
  EXPECT_EQ(gone.entries, stored);
  EXPECT_TRUE(gone.store);
  EXPECT_FALSE(gone.replayed);
  // Settled again with the entry stored: nothing to store.
  EXPECT_FALSE(here.settle(at("45"), customers, only_a, stored).store);

  reload_policy there(true);  // knows nothing of b: the checkpoint's entry tells
  const settled back = there.settle(at("70"), customers, both, stored);
  ASSERT_TRUE(back.replayed);
  EXPECT_EQ(back.replayed->mappings, std::vector<std::string>{"b"});
  EXPECT_EQ(back.from.resume_after, token("40"));
  EXPECT_EQ(back.from.gate, (replay_gate{"70", {{"b", "40"}}}));
  EXPECT_TRUE(back.entries.empty());
  EXPECT_TRUE(back.store);
}

TEST(reload_policy_test, with_ha_a_recorded_mapping_that_does_not_run_gets_an_entry_at_the_base) {
  const planner only_a = set_of({a}), both = set_of({a, b});
  const std::vector<recorded_mapping> recorded{
      {"b", fingerprint_of(both, "b"), true, {customers}, {}}};
  // Removed by another instance: the one that held customers applied it up to its checkpoint.
  reload_policy policy(true);
  policy.start(recorded, only_a);
  const settled s = policy.settle(at("50"), customers, only_a, {});
  EXPECT_EQ(s.entries, std::vector<stopped_mapping>{entry(both, "b", "50")});
  EXPECT_TRUE(s.store);
  // An earlier entry wins.
  const std::vector<stopped_mapping> earlier{entry(both, "b", "25")};
  EXPECT_EQ(policy.settle(at("50"), customers, only_a, earlier).entries, earlier);
  EXPECT_FALSE(policy.settle(at("50"), customers, only_a, earlier).store);
  // A namespace the gone mapping did not read gets no entry; one without a position neither.
  EXPECT_TRUE(policy.settle(at("50"), products, only_a, {}).entries.empty());
  EXPECT_FALSE(policy.settle(resume_position{}, customers, only_a, {}).store);
  // Without --ha a removed mapping without an entry stopped where nobody knows.
  reload_policy alone(false);
  alone.start(recorded, only_a);
  EXPECT_TRUE(alone.settle(at("50"), customers, only_a, {}).entries.empty());
}

}  // namespace
}  // namespace denormd::mapping
