// Resume tokens and the bounded change history without a server.

#include <gtest/gtest.h>

#include "oplog.h"
#include "resume_token.h"

namespace mongo_emulator {
namespace {

using kind = resume_token::kind;

TEST(resume_token, round_trips_and_sorts_in_event_order) {
  const resume_token a({100, 1}, kind::event);
  const resume_token b({100, 1}, kind::invalidate);
  const resume_token c({100, 1}, kind::high_water);
  const resume_token d({100, 2}, kind::event);
  const resume_token e({101, 0}, kind::event);
  for (const auto& t : {a, b, c, d, e}) {
    auto parsed = resume_token::parse(bson::value(t.to_document()));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_LT(a.data(), b.data());
  EXPECT_LT(b.data(), c.data());
  EXPECT_LT(c.data(), d.data());
  EXPECT_LT(d.data(), e.data());
  EXPECT_TRUE(a < b && b < c && c < d && d < e);
}

TEST(resume_token, before_is_just_under_a_time) {
  EXPECT_EQ(resume_token::before({100, 5}), resume_token({100, 4}, kind::high_water));
  EXPECT_EQ(resume_token::before({100, 0}), resume_token({99, 0xFFFFFFFFU}, kind::high_water));
  EXPECT_LT(resume_token::before({100, 5}), resume_token({100, 5}, kind::event));
}

TEST(resume_token, rejects_foreign_tokens_with_40647) {
  for (const char* data : {"", "zz", "0000006400000001", "00000064000000010", "0000006400000001FF",
                           "0000006400000001ab"}) {
    auto t = resume_token::parse(bson::value(bson::document{{"_data", data}}));
    ASSERT_FALSE(t) << data;
    EXPECT_EQ(t.error().code, 40647);
  }
  EXPECT_FALSE(resume_token::parse(bson::value(std::int32_t{1})));
  EXPECT_FALSE(resume_token::parse(bson::value(bson::document{{"_data", std::int32_t{1}}})));
}

oplog_entry at(std::uint32_t i) {
  oplog_entry e;
  e.ts = {100, i};
  return e;
}

TEST(oplog, keeps_the_newest_entries_and_reports_lost_history) {
  oplog log(3);
  for (std::uint32_t i = 1; i <= 3; ++i)
    log.append(at(i));
  EXPECT_FALSE(log.history_lost({100, 0}, false));
  EXPECT_FALSE(log.history_lost({100, 1}, true));
  for (std::uint32_t i = 4; i <= 5; ++i)
    log.append(at(i));
  ASSERT_EQ(log.size(), 3U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 3}));
  // Entries 1 and 2 are gone: resuming after 1 loses 2; after 2 loses nothing.
  EXPECT_TRUE(log.history_lost({100, 1}, false));
  EXPECT_FALSE(log.history_lost({100, 2}, false));
  // An event token must still have its own event.
  EXPECT_TRUE(log.history_lost({100, 2}, true));
  EXPECT_FALSE(log.history_lost({100, 3}, true));
  EXPECT_EQ(log.find({100, 4})->ts, (bson::timestamp{100, 4}));
  EXPECT_EQ(log.find({100, 2}), nullptr);
  EXPECT_EQ(log.lower_bound({100, 4}), 1U);
  EXPECT_EQ(log.lower_bound({101, 0}), 3U);
}

}  // namespace
}  // namespace mongo_emulator
