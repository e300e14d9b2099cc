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

TEST(reload_policy_test, removed_then_put_back_replays_from_where_it_stopped_once) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy;
  policy.begin(both, only_a);
  EXPECT_TRUE(policy.stopped(customers, at("20"), both, only_a).empty());
  policy.running(only_a);
  ASSERT_EQ(policy.removed().count("b"), 1u);
  EXPECT_EQ(
      policy.removed().at("b"),
      (removed_mapping{fingerprint_of(both, "b"), {{customers, token("20"), std::nullopt, ""}}}));

  // Put back while a's pipeline applied up to 50: the stream goes back to 20, and a skips to 50.
  policy.begin(only_a, both);
  const auto replay = policy.returning(at("50"), customers, both);
  ASSERT_TRUE(replay);
  EXPECT_TRUE(replay->rewound);
  EXPECT_EQ(replay->mappings, std::vector<std::string>{"b"});
  EXPECT_EQ(replay->from.resume_after, token("20"));
  EXPECT_EQ(replay->from.gate, (replay_gate{"50", {{"b", "20"}}}));
  // Its stop point is used up: put back again, nothing replays.
  EXPECT_FALSE(policy.returning(at("50"), customers, both));
  policy.running(both);
  EXPECT_EQ(policy.removed().count("b"), 0u);
}

TEST(reload_policy_test, put_back_changed_is_not_replayed_and_leaves_the_removed_list) {
  const planner both = set_of({a, b}), only_a = set_of({a}), changed = set_of({a, b_changed});
  reload_policy policy;
  policy.stopped(customers, at("20"), both, only_a);
  EXPECT_FALSE(policy.returning(at("50"), customers, changed));
  policy.running(changed);
  EXPECT_TRUE(policy.removed().empty());
}

TEST(reload_policy_test, a_removed_mapping_whose_pipeline_applied_nothing_has_no_stop_point) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy;
  EXPECT_EQ(policy.stopped(customers, resume_position{}, both, only_a),
            std::vector<std::string>{"b"});
  EXPECT_TRUE(policy.removed().empty());
  EXPECT_FALSE(policy.returning(at("50"), customers, both));
}

TEST(reload_policy_test, put_back_where_nothing_was_applied_starts_at_its_stop_point_ungated) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy policy;
  policy.stopped(customers, at("20"), both, only_a);
  resume_position now;
  now.start_at = bson::timestamp{7, 1};
  const auto replay = policy.returning(now, customers, both);
  ASSERT_TRUE(replay);
  EXPECT_TRUE(replay->rewound);
  EXPECT_EQ(replay->from.resume_after, token("20"));
  EXPECT_FALSE(replay->from.start_at);
  EXPECT_FALSE(replay->from.gate);
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
  const std::vector<recorded_mapping> recorded{
      {"a", fingerprint_of(both, "a"), false, {customers}, {}},
      {"b", fingerprint_of(both, "b"), false, {customers}, {}},
      {"p", "fp", true, {products}, {{products, token("05"), std::nullopt, ""}}}};
  EXPECT_EQ(reload_policy::positions_needed(recorded, only_a), std::vector<ns>{customers});
  reload_policy policy;
  policy.start(recorded, only_a, {{customers, at("30")}});
  EXPECT_EQ(policy.removed().at("b").stopped_at,
            (std::vector<stop_point>{{customers, token("30"), std::nullopt, ""}}));
  EXPECT_EQ(policy.removed().at("p").stopped_at.size(), 1u);  // removed before: kept as recorded
  const auto replay = policy.returning(at("60"), customers, both);
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->from.resume_after, token("30"));
}

TEST(reload_policy_test, with_ha_a_removed_mapping_put_back_on_another_instance_replays) {
  const planner both = set_of({a, b}), only_a = set_of({a});
  reload_policy here;
  here.begin(both, only_a);
  const settled gone = here.settle(at("40"), customers, only_a, {});
  const std::vector<stopped_mapping> entry{
      {"b", fingerprint_of(both, "b"), token("40"), std::nullopt, ""}};
  EXPECT_EQ(gone.entries, entry);
  EXPECT_TRUE(gone.store);
  EXPECT_FALSE(gone.replayed);
  // Settled again with the entry stored: nothing to store.
  EXPECT_FALSE(here.settle(at("45"), customers, only_a, entry).store);

  reload_policy there;  // knows nothing of b: the checkpoint's entry tells
  const settled back = there.settle(at("70"), customers, both, entry);
  ASSERT_TRUE(back.replayed);
  EXPECT_EQ(back.replayed->mappings, std::vector<std::string>{"b"});
  EXPECT_EQ(back.from.resume_after, token("40"));
  EXPECT_EQ(back.from.gate, (replay_gate{"70", {{"b", "40"}}}));
  EXPECT_TRUE(back.entries.empty());
  EXPECT_TRUE(back.store);
}

TEST(reload_policy_test, with_ha_put_back_changed_drops_its_entry_without_a_replay) {
  const planner both = set_of({a, b}), changed = set_of({a, b_changed});
  reload_policy policy;
  const settled s =
      policy.settle(at("70"), customers, changed,
                    {{"b", fingerprint_of(both, "b"), token("40"), std::nullopt, ""}});
  EXPECT_FALSE(s.replayed);
  EXPECT_TRUE(s.entries.empty());
  EXPECT_TRUE(s.store);
  EXPECT_EQ(s.from, at("70"));
}

TEST(reload_policy_test, with_ha_removed_across_restarts_stopped_where_recorded) {
  const planner only_a = set_of({a}), both = set_of({a, b});
  const std::vector<recorded_mapping> recorded{{"b",
                                                fingerprint_of(both, "b"),
                                                true,
                                                {customers},
                                                {{customers, token("25"), std::nullopt, ""}}}};
  reload_policy policy;
  policy.start(recorded, only_a, {});
  // The recorded stop point wins over the base: b stopped earlier than this holder's position.
  const settled s = policy.settle(at("50"), customers, only_a, {});
  EXPECT_EQ(s.entries, (std::vector<stopped_mapping>{
                           {"b", fingerprint_of(both, "b"), token("25"), std::nullopt, ""}}));
  const settled back = reload_policy{}.settle(at("90"), customers, both, s.entries);
  ASSERT_TRUE(back.replayed);
  EXPECT_EQ(back.from.resume_after, token("25"));
  // A namespace the gone mapping did not read gets no entry; one without a position neither.
  EXPECT_TRUE(policy.settle(at("50"), products, only_a, {}).entries.empty());
  EXPECT_FALSE(policy.settle(resume_position{}, customers, only_a, {}).store);
}

}  // namespace
}  // namespace denormd::mapping
