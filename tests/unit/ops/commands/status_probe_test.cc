#include "ops/commands/status_probe.h"

#include <gtest/gtest.h>

#include "../test_mappings.h"
#include "bson/json.h"

namespace denormd::ops {
namespace {

using testing::doc;

TEST(ops_status_probe_test, token_cluster_time_reads_mongodb_resume_tokens) {
  const auto t = token_cluster_time(doc(
      R"({"_data":"8263A1B2C3000000012B022C0100296E5A1004A5093ABB38FE4B9EA67F01BB1A96D812463C5F6964003C5F5F5F78000004"})"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->t, 0x63A1B2C3u);
  EXPECT_EQ(t->i, 1u);
}

TEST(ops_status_probe_test, token_cluster_time_other_formats_are_unknown) {
  EXPECT_FALSE(token_cluster_time(doc(R"({"_data":"000000650000000100"})")));
  EXPECT_FALSE(token_cluster_time(doc(R"({"_data":"82"})")));
  EXPECT_FALSE(token_cluster_time(doc(R"({"_data":"82ZZZZZZZZZZZZZZZZ00"})")));
  EXPECT_FALSE(token_cluster_time(doc(R"({"other":1})")));
  EXPECT_FALSE(token_cluster_time(doc(R"({"_data":1})")));
}

std::vector<source_status> sample() {
  source_status lost;
  lost.source = {"shop", "customers"};
  lost.has_checkpoint = true;
  lost.token = doc(R"({"_data":"000000650000000100"})");
  lost.event_ms = 1714557600000;
  lost.saved_ms = 1714557610000;
  lost.history = history_state::lost;
  lost.detail = "server error 286: history lost";
  lost.headroom_seconds = -125;
  lost.headroom_passed = true;
  source_status none;
  none.source = {"shop", "orders"};
  source_status kept;
  kept.source = {"shop", "products"};
  kept.has_checkpoint = true;
  kept.token = doc(R"({"_data":"8266321000000000012B"})");
  kept.cluster_time = bson::timestamp{0x66321000, 1};
  kept.saved_ms = 1714557610000;
  kept.history = history_state::reachable;
  kept.headroom_seconds = 11520;
  source_status refused = kept;
  refused.source = {"shop", "reviews"};
  refused.headroom_seconds.reset();
  refused.headroom_detail = "cannot read the oldest entry of local.oplog.rs: the user lacks ...";
  // With --ha: held, expired, released.
  kept.lease = lease_status{"host-a:1", 3, 1714557625000, false};
  refused.lease = lease_status{"host-b:7", 5, 1714557608000, true};
  none.lease = lease_status{"", 2, 0, true};
  return {lost, none, kept, refused};
}

// A checkpoint in the same second as the oldest kept entry, after it: history reaches it, with
// 0s to spare; one before it in that second has none.
TEST(ops_status_probe_test, headroom_within_one_second) {
  source_status s;
  s.source = {"shop", "customers"};
  s.has_checkpoint = true;
  s.token = doc(R"({"_data":"8266321000000000012B"})");
  s.saved_ms = 1714557610000;
  s.history = history_state::reachable;
  s.headroom_seconds = 0;
  EXPECT_NE(to_text({s}, 1714557620000).find("history headroom 0s (until the oldest entry"),
            std::string::npos)
      << to_text({s}, 1714557620000);
  s.headroom_passed = true;
  EXPECT_NE(to_text({s}, 1714557620000)
                .find("history headroom none: the oldest entry the server "
                      "keeps is 0s past the checkpoint"),
            std::string::npos)
      << to_text({s}, 1714557620000);
}

TEST(ops_status_probe_test, renders_text) {
  const std::string text = to_text(sample(), 1714557620000);
  EXPECT_NE(text.find("shop.customers: checkpoint saved 2024-05-01T10:00:10.000Z (10s ago), "
                      "last event 2024-05-01T10:00:00.000Z (20s ago)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("token {\"_data\":\"000000650000000100\"}"), std::string::npos);
  EXPECT_NE(text.find("history: LOST"), std::string::npos);
  EXPECT_NE(text.find("shop.orders: no checkpoint"), std::string::npos);
  EXPECT_NE(text.find("history headroom none: history lost (the oldest entry the server keeps "
                      "is 2m05s past the checkpoint)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("history headroom 3h12m (until the oldest entry the server keeps passes "
                      "the checkpoint)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("history headroom unknown: cannot read the oldest entry of "
                      "local.oplog.rs: the user lacks"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  lease: held by host-a:1, expires 2024-05-01T10:00:25.000Z (epoch 3)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  lease: expired 12s ago (last held by host-b:7), nobody streams it "
                      "(epoch 5)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("shop.orders: no checkpoint (denormd run starts this source at the current "
                      "time)\n  lease: released, nobody streams it (epoch 2)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(
      text.find(
          "shop.customers: checkpoint saved 2024-05-01T10:00:10.000Z (10s ago), last "
          "event 2024-05-01T10:00:00.000Z (20s ago)\n  token {\"_data\":\"000000650000000100\"}"
          "\n  history: LOST: the server no longer keeps changes that old; denormd run "
          "must re-sync (server error 286: history lost)\n  history headroom none: the "
          "oldest entry the server keeps is 2m05s past the checkpoint\n  lease"),
      std::string::npos)
      << "a namespace without a lease row shows none";
}

TEST(ops_status_probe_test, renders_json) {
  auto parsed = bson::parse_json(to_json(sample(), 1714557620000));
  ASSERT_TRUE(parsed.has_value());
  const auto& sources = parsed->get("sources")->as_array();
  ASSERT_EQ(sources.size(), 4u);
  const auto& lost = sources[0].as_document();
  EXPECT_EQ(lost.get("source")->as_string(), "shop.customers");
  EXPECT_EQ(lost.get("history")->as_string(), "lost");
  EXPECT_EQ(lost.get("savedAt")->as_string(), "2024-05-01T10:00:10.000Z");
  EXPECT_EQ(lost.get("wallTime")->as_string(), "2024-05-01T10:00:00.000Z");
  EXPECT_DOUBLE_EQ(lost.get("ageSeconds")->to_double(), 10.0);
  EXPECT_TRUE(lost.get("clusterTime")->is_null());
  EXPECT_EQ(*lost.get("checkpoint"), bson::value(true));
  const auto& none = sources[1].as_document();
  EXPECT_EQ(*none.get("checkpoint"), bson::value(false));
  EXPECT_EQ(none.get("history")->as_string(), "no checkpoint");
  EXPECT_EQ(none.get("headroomSeconds"), nullptr);
  EXPECT_DOUBLE_EQ(lost.get("headroomSeconds")->to_double(), -125);
  const auto& kept = sources[2].as_document();
  EXPECT_DOUBLE_EQ(kept.get("headroomSeconds")->to_double(), 11520);
  EXPECT_EQ(kept.get("headroomDetail"), nullptr);
  const auto& refused = sources[3].as_document();
  EXPECT_TRUE(refused.get("headroomSeconds")->is_null());
  EXPECT_NE(refused.get("headroomDetail")->as_string().find("local.oplog.rs"), std::string::npos);
  EXPECT_EQ(lost.get("lease"), nullptr);
  const auto& held = kept.get("lease")->as_document();
  EXPECT_EQ(held.get("owner")->as_string(), "host-a:1");
  EXPECT_EQ(held.get("epoch")->to_double(), 3);
  EXPECT_EQ(held.get("expiresAt")->as_string(), "2024-05-01T10:00:25.000Z");
  EXPECT_EQ(*held.get("expired"), bson::value(false));
  EXPECT_EQ(*refused.get("lease")->as_document().get("expired"), bson::value(true));
}

// Where removed mappings stopped, as the checkpoint keeps them: listed under the namespace.
TEST(ops_status_probe_test, renders_the_stopped_mappings_of_a_checkpoint) {
  std::vector<source_status> all = sample();
  all[2].stopped.push_back({"p", "0123456789abcdef", doc(R"({"_data":"8266"})"), std::nullopt, ""});
  const std::string text = to_text(all, 1714557620000);
  EXPECT_NE(text.find("  token {\"_data\":\"8266321000000000012B\"}\n  removed mapping p "
                      "(fingerprint 0123456789abcdef) stopped after token {\"_data\":\"8266\"}\n"
                      "  history: reaches"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("removed mapping", text.find("shop.reviews")), std::string::npos) << text;
  auto parsed = bson::parse_json(to_json(all, 1714557620000));
  ASSERT_TRUE(parsed.has_value());
  const auto& sources = parsed->get("sources")->as_array();
  const auto& stopped = sources[2].as_document().get("stoppedMappings")->as_array();
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].as_document(), doc(R"({"mapping":"p","fingerprint":"0123456789abcdef",)"
                                          R"("token":{"_data":"8266"}})"));
  EXPECT_EQ(sources[3].as_document().get("stoppedMappings"), nullptr);
}

}  // namespace
}  // namespace denormd::ops
