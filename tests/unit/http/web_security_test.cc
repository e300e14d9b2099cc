#include "http/web_security.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "common/log.h"
#include "test_certificates.h"

namespace denormd::http {
namespace {

using namespace std::chrono_literals;

class web_security_test : public ::testing::Test {
 protected:
  void SetUp() override { log::configure(log::format::text, log::level::info, &log_); }
  void TearDown() override { log::configure(log::format::text, log::level::info, &std::cerr); }

  std::string users_file(const std::string& user, const std::string& password) {
    return "basic_auth_users:\n  " + user + ": " + testing::bcrypt_hash(password) + "\n";
  }

  // Rewrites the file so that its stamp surely changes (size, or modification time).
  void rewrite(const std::string& name, const std::string& text) {
    std::this_thread::sleep_for(10ms);
    dir_.write(name, text);
  }

  std::shared_ptr<web_security> open(const std::string& text) {
    auto s = web_security::open(dir_.write("web.yml", text), 0ms);
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }

  std::string tls_file() {
    const auto id = testing::make_identity("localhost", nullptr, false, "DNS:localhost");
    testing::write_pem(id, dir_.file("cert.pem"), dir_.file("key.pem"));
    return "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n";
  }

  testing::scratch_dir dir_;
  std::ostringstream log_;
};

TEST_F(web_security_test, open_reads_the_file_and_its_tls_files) {
  auto plain = open(users_file("alice", "pw"));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tls());
  EXPECT_EQ(plain->current()->config.users.count("alice"), 1u);
  EXPECT_EQ(plain->current()->tls, nullptr);

  auto tls = open(tls_file());
  ASSERT_TRUE(tls);
  EXPECT_TRUE(tls->tls());
  EXPECT_NE(tls->current()->tls, nullptr);
}

TEST_F(web_security_test, open_fails_on_a_bad_file_or_a_bad_certificate) {
  auto bad = web_security::open(dir_.write("web.yml", "basic_auth_users: x\n"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("basic_auth_users"), std::string::npos);
  auto no_cert = web_security::open(
      dir_.write("web.yml", "tls_server_config:\n  cert_file: none.pem\n  key_file: k.pem\n"));
  ASSERT_FALSE(no_cert);
  EXPECT_NE(no_cert.error().message.find("tls_server_config.cert_file: cannot load"),
            std::string::npos);
}

TEST_F(web_security_test, a_changed_file_is_read_again) {
  auto s = open(users_file("alice", "pw"));
  ASSERT_TRUE(s);
  const auto before = s->current();
  EXPECT_EQ(s->current(), before);  // unchanged: the same settings
  rewrite("web.yml",
          users_file("bob", "pw") + "http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  const auto after = s->current();
  ASSERT_NE(after, before);
  EXPECT_EQ(after->config.users.count("alice"), 0u);
  EXPECT_EQ(after->config.users.count("bob"), 1u);
  ASSERT_EQ(after->config.headers.size(), 1u);
  EXPECT_NE(log_.str().find("web config file read again"), std::string::npos) << log_.str();
}

TEST_F(web_security_test, a_changed_certificate_is_read_again) {
  auto s = open(tls_file());
  ASSERT_TRUE(s);
  const auto before = s->current()->tls;
  std::this_thread::sleep_for(10ms);
  tls_file();  // a new key and certificate in the same files
  EXPECT_NE(s->current()->tls, before);
}

TEST_F(web_security_test, an_invalid_change_keeps_the_settings_and_is_logged_once) {
  auto s = open(users_file("alice", "pw"));
  ASSERT_TRUE(s);
  const auto before = s->current();
  rewrite("web.yml", "basic_auth_users:\n  alice: not-a-hash\n");
  EXPECT_EQ(s->current(), before);
  EXPECT_EQ(s->current(), before);
  const std::string logged = log_.str();
  const auto first = logged.find("keeping the settings in force");
  ASSERT_NE(first, std::string::npos) << logged;
  EXPECT_EQ(logged.find("keeping the settings in force", first + 1), std::string::npos) << logged;
  EXPECT_NE(logged.find("basic_auth_users.alice"), std::string::npos) << logged;
  // Fixed: read again.
  rewrite("web.yml", users_file("carol", "pw"));
  EXPECT_EQ(s->current()->config.users.count("carol"), 1u);
}

TEST_F(web_security_test, tls_cannot_be_added_or_removed_while_listening) {
  auto plain = open(users_file("alice", "pw"));
  ASSERT_TRUE(plain);
  rewrite("web.yml", tls_file());
  EXPECT_EQ(plain->current()->tls, nullptr);
  EXPECT_FALSE(plain->tls());
  EXPECT_NE(log_.str().find("tls_server_config cannot be added"), std::string::npos) << log_.str();
}

TEST_F(web_security_test, the_file_is_looked_at_once_per_recheck_interval) {
  auto s = web_security::open(dir_.write("web.yml", users_file("alice", "pw")), 1h);
  ASSERT_TRUE(s) << s.error().message;
  rewrite("web.yml", users_file("bob", "pw"));
  EXPECT_EQ((*s)->current()->config.users.count("alice"), 1u);
}

TEST_F(web_security_test, failed_logins_are_logged_at_most_once_per_ten_seconds) {
  auto s = open(users_file("alice", "pw"));
  ASSERT_TRUE(s);
  for (int i = 0; i < 50; ++i)
    s->failed_login("mallory", "192.0.2.1:4242");
  const std::string logged = log_.str();
  const auto first = logged.find("HTTP login failed");
  ASSERT_NE(first, std::string::npos) << logged;
  EXPECT_EQ(logged.find("HTTP login failed", first + 1), std::string::npos) << logged;
  EXPECT_NE(logged.find("mallory"), std::string::npos);
  EXPECT_NE(logged.find("192.0.2.1:4242"), std::string::npos);
}

}  // namespace
}  // namespace denormd::http
