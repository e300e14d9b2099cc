// New ObjectIds: the test server gives one to every document inserted without _id.
#include "object_id.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

namespace {

TEST(object_id, each_is_new_and_starts_with_the_time) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i)
    EXPECT_TRUE(seen.insert(denormd::test::new_object_id().to_hex()).second);
  const auto o = denormd::test::new_object_id();
  const std::uint32_t secs = (std::uint32_t{o.bytes[0]} << 24) | (std::uint32_t{o.bytes[1]} << 16) |
                             (std::uint32_t{o.bytes[2]} << 8) | o.bytes[3];
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_LE(static_cast<long long>(secs), now);
  EXPECT_GE(static_cast<long long>(secs), now - 60);
}

}  // namespace
