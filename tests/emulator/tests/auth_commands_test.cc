// Authentication with --auth: SCRAM-SHA-256 and SCRAM-SHA-1 through libmongoc (explicit, and
// negotiated through hello's saslSupportedMechs), speculative authentication in the handshake,
// MongoDB's errors over a raw socket (18 for a wrong password or an unknown user, 17 for a
// conversation that does not exist), the localhost exception, logout and connectionStatus.

#include <gtest/gtest.h>

#include "auth_server.h"
#include "raw_client.h"

namespace mongo_emulator::test {
namespace {

bson::binary bytes(std::string_view s) {
  return bson::binary{0, std::vector<std::uint8_t>(s.begin(), s.end())};
}

std::string text(const bson::value& v) {
  const auto& data = v.as<bson::binary>().data;
  return std::string(data.begin(), data.end());
}

bson::document sasl_start(std::string_view user, std::string_view nonce) {
  bson::document cmd{{"saslStart", std::int32_t{1}}, {"mechanism", "SCRAM-SHA-256"}};
  cmd.append("payload", bytes("n,,n=" + std::string(user) + ",r=" + std::string(nonce)));
  cmd.append("options", bson::document{{"skipEmptyExchange", true}});
  cmd.append("$db", "admin");
  return cmd;
}

std::int64_t command_count(test_client& admin, std::string_view name) {
  const auto status = admin.command("admin", J(R"({"serverStatus": 1})"));
  EXPECT_TRUE(status) << status.error().message;
  const auto& total = at(*status, "metrics.commands." + std::string(name) + ".total");
  return total.is<std::int64_t>() ? total.as<std::int64_t>() : 0;
}

class auth_commands : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs a server of its own";
    server_ = auth_server::start();
    ASSERT_TRUE(server_);
  }
  std::unique_ptr<auth_server> server_;
};

TEST_F(auth_commands, scram_sha_256_and_sha_1_log_in) {
  server_->create_user("u", "pw", R"([{"role": "read", "db": "shop"}])");
  for (const char* mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-1"}) {
    auto c = server_->login("u", "pw", std::string("authMechanism=") + mechanism);
    auto status = c.command("admin", J(R"({"connectionStatus": 1})"));
    ASSERT_TRUE(status) << mechanism << ": " << status.error().message;
    EXPECT_EQ(at(*status, "authInfo"),
              bson::value(J(R"({"authenticatedUsers": [{"user": "u", "db": "admin"}],
                              "authenticatedUserRoles": [{"role": "read", "db": "shop"}]})")))
        << mechanism;
    EXPECT_TRUE(c.command("shop", J(R"({"find": "c"})"))) << mechanism;
  }
}

// libmongoc picks SCRAM-SHA-1 when hello's saslSupportedMechs does not list SCRAM-SHA-256 (its
// speculative SCRAM-SHA-256 attempt gets no answer then).
TEST_F(auth_commands, the_default_mechanism_follows_sasl_supported_mechs) {
  server_->create_user("sha1only", "pw", "[]", R"({"mechanisms": ["SCRAM-SHA-1"]})");
  auto c = server_->login("sha1only", "pw");
  EXPECT_TRUE(c.command("admin", J(R"({"connectionStatus": 1})")));
  auto hello = server_->anonymous().command(
      "admin", J(R"({"hello": 1, "saslSupportedMechs": "admin.sha1only"})"));
  ASSERT_TRUE(hello);
  EXPECT_EQ(at(*hello, "saslSupportedMechs"), bson::value(A(R"(["SCRAM-SHA-1"])")));
  hello = server_->anonymous().command("admin",
                                       J(R"({"hello": 1, "saslSupportedMechs": "admin.admin"})"));
  ASSERT_TRUE(hello);
  EXPECT_EQ(at(*hello, "saslSupportedMechs"),
            bson::value(A(R"(["SCRAM-SHA-1", "SCRAM-SHA-256"])")));
  hello = server_->anonymous().command("admin",
                                       J(R"({"hello": 1, "saslSupportedMechs": "admin.nobody"})"));
  ASSERT_TRUE(hello);
  EXPECT_FALSE(hello->contains("saslSupportedMechs"));
}

// libmongoc 1.23 sends the first SCRAM step in the handshake's speculativeAuthenticate and
// continues from the server's answer: no saslStart is run.
TEST_F(auth_commands, libmongoc_authenticates_speculatively) {
  const auto starts = command_count(server_->admin(), "saslStart");
  const auto continues = command_count(server_->admin(), "saslContinue");
  auto c = server_->login("admin", "admin-pw");
  ASSERT_TRUE(c.command("admin", J(R"({"ping": 1})")));
  EXPECT_EQ(command_count(server_->admin(), "saslStart"), starts);
  EXPECT_EQ(command_count(server_->admin(), "saslContinue"), continues + 1);
}

TEST_F(auth_commands, a_wrong_password_or_an_unknown_user_fails_the_driver) {
  for (const auto& [user, pwd] : {std::pair{"admin", "wrong"}, std::pair{"nobody", "pw"}}) {
    auto c = server_->login(user, pwd);
    const auto r = c.run("admin", J(R"({"ping": 1})"));
    EXPECT_FALSE(r.ok) << user;
    EXPECT_NE(r.message.find("Authentication failed."), std::string::npos) << r.message;
  }
}

TEST_F(auth_commands, scram_errors_are_mongodbs) {
  auto raw = raw_client::connect(server_->host_port());
  ASSERT_TRUE(raw);
  // An unknown user fails at the first step, as a wrong password does at the second.
  auto r = raw->command(sasl_start("nobody", "abcdefghijklmnop"));
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "code"), bson::value(std::int32_t{18}));
  EXPECT_EQ(at(*r, "codeName"), bson::value("AuthenticationFailed"));
  EXPECT_EQ(at(*r, "errmsg"), bson::value("Authentication failed."));
  r = raw->command(sasl_start("admin", "abcdefghijklmnop"));
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "conversationId"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(*r, "done"), bson::value(false));
  const std::string server_first = text(at(*r, "payload"));
  ASSERT_TRUE(server_first.starts_with("r=abcdefghijklmnop")) << server_first;
  EXPECT_NE(server_first.find(",i=15000"), std::string::npos) << server_first;
  const std::string nonce = server_first.substr(2, server_first.find(',') - 2);
  bson::document proof{{"saslContinue", std::int32_t{1}}, {"conversationId", std::int32_t{1}}};
  proof.append("payload",
               bytes("c=biws,r=" + nonce + ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
  proof.append("$db", "admin");
  r = raw->command(proof);
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "code"), bson::value(std::int32_t{18}));
  EXPECT_EQ(at(*r, "errmsg"), bson::value("Authentication failed."));
  // The failed conversation is over.
  r = raw->command(proof);
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "code"), bson::value(std::int32_t{17}));
  EXPECT_EQ(at(*r, "codeName"), bson::value("ProtocolError"));
  r = raw->command(J(R"({"saslStart": 1, "mechanism": "PLAIN", "payload": "", "$db": "admin"})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "code"), bson::value(std::int32_t{2}));
  r = raw->command(J(R"({"find": "c", "$db": "shop"})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "errmsg"), bson::value("command find requires authentication"));
}

TEST_F(auth_commands, hello_answers_a_speculative_sasl_start) {
  auto raw = raw_client::connect(server_->host_port());
  ASSERT_TRUE(raw);
  bson::document start = sasl_start("admin", "speculativenonce");
  start.erase("$db");
  start.append("db", "admin");
  auto r = raw->command(bson::document{
      {"hello", std::int32_t{1}}, {"speculativeAuthenticate", start}, {"$db", "admin"}});
  ASSERT_TRUE(r);
  const auto& answer = at(*r, "speculativeAuthenticate");
  ASSERT_TRUE(answer.is_document()) << bson::to_json(*r);
  EXPECT_EQ(at(answer.as_document(), "conversationId"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(answer.as_document(), "done"), bson::value(false));
  EXPECT_TRUE(text(at(answer.as_document(), "payload")).starts_with("r=speculativenonce"));
  // For an unknown user MongoDB leaves the field out.
  r = raw->command(bson::document{{"hello", std::int32_t{1}},
                                  {"speculativeAuthenticate",
                                   [&] {
                                     bson::document s = sasl_start("nobody", "speculativenonce");
                                     s.erase("$db");
                                     s.append("db", "admin");
                                     return s;
                                   }()},
                                  {"$db", "admin"}});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->contains("speculativeAuthenticate"));
  EXPECT_EQ(at(*r, "ok"), bson::value(1.0));
}

TEST_F(auth_commands, some_commands_need_no_authentication) {
  auto c = server_->anonymous();
  for (const char* cmd :
       {R"({"ping": 1})", R"({"hello": 1})", R"({"buildInfo": 1})", R"({"connectionStatus": 1})"})
    EXPECT_TRUE(c.command("admin", J(cmd))) << cmd;
  const auto r = c.run("admin", J(R"({"listDatabases": 1})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(r.message, "command listDatabases requires authentication");
  const auto status = c.command("admin", J(R"({"connectionStatus": 1})"));
  EXPECT_EQ(at(*status, "authInfo"),
            bson::value(J(R"({"authenticatedUsers": [], "authenticatedUserRoles": []})")));
}

TEST_F(auth_commands, logout_ends_the_connections_authentication) {
  auto c = server_->login("admin", "admin-pw");
  ASSERT_TRUE(c.command("shop", J(R"({"find": "c"})")));
  ASSERT_TRUE(c.command("admin", J(R"({"logout": 1})")));
  const auto r = c.run("shop", J(R"({"find": "c"})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(r.message, "command find requires authentication");
}

class localhost_exception : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs a server of its own";
  }
};

TEST_F(localhost_exception, allows_the_first_user_only) {
  auto server = auth_server::start({}, false);
  ASSERT_TRUE(server);
  auto c = server->anonymous();
  // Before any user: no "requires authentication", but only createUser and grantRole on admin.
  auto r = c.run("shop", J(R"({"find": "c"})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_TRUE(r.message.starts_with("not authorized on shop to execute command { find: \"c\""))
      << r.message;
  r = c.run("admin",
            J(R"({"createUser": "a", "pwd": "p", "roles": [{"role": "read", "db": "shop"}]})"));
  EXPECT_EQ(r.code, 13) << "granting a role of shop needs grantRole on shop";
  r = c.run("admin", J(R"({"createRole": "r", "privileges": [], "roles": []})"));
  EXPECT_EQ(r.code, 13);
  ASSERT_TRUE(c.command("admin", J(R"({"createUser": "first", "pwd": "p", "roles": ["root"]})")));
  r = c.run("admin", J(R"({"createUser": "second", "pwd": "p", "roles": []})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(r.message, "command createUser requires authentication");
  auto first = server->login("first", "p");
  EXPECT_TRUE(first.command("admin", J(R"({"createUser": "second", "pwd": "p", "roles": []})")));
}

TEST_F(localhost_exception, can_be_turned_off) {
  auto server = auth_server::start({"--setParameter", "enableLocalhostAuthBypass=false"}, false);
  ASSERT_TRUE(server);
  const auto r = server->anonymous().run(
      "admin", J(R"({"createUser": "first", "pwd": "p", "roles": ["root"]})"));
  EXPECT_EQ(r.code, 13);
  EXPECT_EQ(r.message, "command createUser requires authentication");
}

}  // namespace
}  // namespace mongo_emulator::test
