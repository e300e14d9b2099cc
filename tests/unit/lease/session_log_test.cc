// The sessions a heartbeat publishes: each once, the most recent first, a bounded number.
#include "lease/session_log.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace denormd::lease {
namespace {

bson::document lsid(std::uint8_t n) {
  return bson::document{{"id", bson::binary{4, std::vector<std::uint8_t>(16, n)}}};
}

std::uint8_t number_of(const bson::document& d) {
  return d.get("id")->as<bson::binary>().data[0];
}

TEST(session_log_test, each_session_once_most_recent_first) {
  session_log log;
  EXPECT_TRUE(log.recent().empty());
  log.note(lsid(1));
  log.note(lsid(2));
  log.note(lsid(2));
  log.note(lsid(1));
  const auto r = log.recent();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(number_of(r[0]), 1);
  EXPECT_EQ(number_of(r[1]), 2);
}

TEST(session_log_test, keeps_only_the_id_and_at_most_max_sessions) {
  session_log log;
  bson::document with_more = lsid(200);
  with_more.append("uid", "someone");
  log.note(with_more);
  log.note(bson::document{{"no_id", 1}});  // not a session id: ignored
  ASSERT_EQ(log.recent().size(), 1u);
  EXPECT_EQ(log.recent()[0].get("uid"), nullptr);
  for (int i = 0; i < 100; ++i)
    log.note(lsid(static_cast<std::uint8_t>(i)));
  const auto r = log.recent();
  ASSERT_EQ(r.size(), session_log::max_sessions);
  EXPECT_EQ(number_of(r.front()), 99);
  EXPECT_EQ(number_of(r.back()), 100 - session_log::max_sessions);
}

}  // namespace
}  // namespace denormd::lease
