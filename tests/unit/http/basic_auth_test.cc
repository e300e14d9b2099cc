#include "http/basic_auth.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_certificates.h"

namespace denormd::http {
namespace {

using testing::bcrypt_hash;

TEST(basic_auth, bcrypt_hashes_of_the_three_prefixes_are_accepted) {
  const std::string h = bcrypt_hash("pw");
  EXPECT_EQ(basic_auth::hash_problem(h), "");
  for (const char* prefix : {"$2a$", "$2y$"}) {
    const std::string other = prefix + h.substr(4);
    EXPECT_EQ(basic_auth::hash_problem(other), "") << other;
  }
}

TEST(basic_auth, anything_else_is_not_a_bcrypt_hash) {
  const std::string h = bcrypt_hash("pw");
  const std::string expected =
      "is not a bcrypt hash ($2a$, $2b$ or $2y$, a cost from 04 to 31, 60 characters)";
  const std::vector<std::string> bads = {"pw",
                                         "",
                                         h.substr(0, 59),
                                         h + "x",
                                         "$2x$" + h.substr(4),
                                         "$2b$03" + h.substr(6),
                                         "$2b$32" + h.substr(6),
                                         "$2b$1a" + h.substr(6),
                                         h.substr(0, 30) + "!" + h.substr(31),
                                         "$6$saltsalt$" + std::string(48, 'a')};
  for (const std::string& bad : bads)
    EXPECT_EQ(basic_auth::hash_problem(bad), expected) << bad;
}

TEST(basic_auth, an_authorization_header_gives_its_user_and_password) {
  // "user:pa:ss" in base64: the password may hold a colon, the user may not.
  auto c = basic_auth::parse_header("Basic dXNlcjpwYTpzcw==");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "user");
  EXPECT_EQ(c->password, "pa:ss");
  auto lower = basic_auth::parse_header("basic   dXNlcjpwYTpzcw== ");
  ASSERT_TRUE(lower);
  EXPECT_EQ(lower->password, "pa:ss");
  auto empty = basic_auth::parse_header("Basic Og==");  // ":"
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->user, "");
  EXPECT_EQ(empty->password, "");
}

TEST(basic_auth, other_schemes_and_malformed_values_give_nothing) {
  for (const char* bad : {"", "Basic", "Bearer dXNlcjpwYXNz", "Basic dXNlcjpwYXNz=",
                          "Basic dXNlcnBhc3M=" /* no colon */, "Basic d*Nlcjpw", "BasicdXNlcjpw"})
    EXPECT_FALSE(basic_auth::parse_header(bad)) << bad;
}

TEST(basic_auth, verify_takes_the_right_password_only) {
  const basic_auth::users users = {{"alice", bcrypt_hash("a-pw")}, {"bob", bcrypt_hash("b-pw")}};
  basic_auth auth;
  EXPECT_TRUE(auth.verify(users, {"alice", "a-pw"}));
  EXPECT_TRUE(auth.verify(users, {"bob", "b-pw"}));
  EXPECT_FALSE(auth.verify(users, {"alice", "b-pw"}));
  EXPECT_FALSE(auth.verify(users, {"alice", "a-pw "}));
  EXPECT_FALSE(auth.verify(users, {"alice", ""}));
  // An unknown user fails even with a password another user has.
  EXPECT_FALSE(auth.verify(users, {"carol", "a-pw"}));
  EXPECT_FALSE(auth.verify({}, {"alice", "a-pw"}));
}

TEST(basic_auth, a_success_is_remembered_and_a_failure_is_not) {
  const basic_auth::users users = {{"alice", bcrypt_hash("a-pw")}};
  basic_auth auth;
  EXPECT_FALSE(auth.remembered(users, {"alice", "a-pw"}));
  EXPECT_FALSE(auth.verify(users, {"alice", "wrong"}));
  EXPECT_FALSE(auth.remembered(users, {"alice", "wrong"}));
  ASSERT_TRUE(auth.verify(users, {"alice", "a-pw"}));
  EXPECT_TRUE(auth.remembered(users, {"alice", "a-pw"}));
  EXPECT_FALSE(auth.remembered(users, {"alice", "a-pw2"}));
  // A new hash for the user (its password changed in the file) misses the cache.
  const basic_auth::users changed = {{"alice", bcrypt_hash("a-pw")}};
  EXPECT_FALSE(auth.remembered(changed, {"alice", "a-pw"}));
  EXPECT_FALSE(auth.remembered({}, {"alice", "a-pw"}));
}

TEST(basic_auth, the_cache_keeps_the_newest_successes_only) {
  basic_auth::users users;
  for (const char* name : {"u1", "u2", "u3"})
    users[name] = bcrypt_hash(std::string(name) + "-pw");
  basic_auth auth(2);
  for (const char* name : {"u1", "u2", "u3"})
    ASSERT_TRUE(auth.verify(users, {name, std::string(name) + "-pw"}));
  EXPECT_FALSE(auth.remembered(users, {"u1", "u1-pw"}));
  EXPECT_TRUE(auth.remembered(users, {"u2", "u2-pw"}));
  EXPECT_TRUE(auth.remembered(users, {"u3", "u3-pw"}));
}

}  // namespace
}  // namespace denormd::http
