#include "app/replay.h"

#include <gtest/gtest.h>

namespace denormd::app {
namespace {

TEST(replay_test, start_at_accepts_iso_8601_and_t_i) {
  auto iso = parse_start_at("2024-05-01T10:00:00Z");
  ASSERT_TRUE(iso.has_value()) << iso.error().message;
  EXPECT_EQ(iso->t, 1714557600u);
  EXPECT_EQ(iso->i, 0u);
  auto ts = parse_start_at("1714557600:7");
  ASSERT_TRUE(ts.has_value());
  EXPECT_EQ(*ts, (bson::timestamp{1714557600, 7}));
  for (const char* bad :
       {"yesterday", "12:", ":3", "1:2:3", "2024-13-45T00:00:00Z", "1969-01-01T00:00:00Z"}) {
    EXPECT_FALSE(parse_start_at(bad).has_value()) << bad;
  }
}

TEST(replay_test, resume_after_needs_a_token_document) {
  options o;
  o.resume_after = R"({"_data":"8265A1B2C3"})";
  auto r = parse_replay(o);
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->resume_after.has_value());
  EXPECT_FALSE(r->start_at.has_value());
  o.resume_after = "8265A1B2C3";
  auto bad = parse_replay(o);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("resume token"), std::string::npos);
}

}  // namespace
}  // namespace denormd::app
