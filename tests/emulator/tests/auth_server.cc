#include "auth_server.h"

namespace mongo_emulator::test {

std::unique_ptr<auth_server> auth_server::start(const std::vector<std::string>& extra_args,
                                                bool first_user) {
  std::vector<std::string> args{"--auth"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  auto process = denormd::test::emulator_process::start(args);
  EXPECT_TRUE(process) << process.error().message;
  if (!process) return nullptr;
  std::unique_ptr<auth_server> server(new auth_server(std::move(process).value()));
  if (!first_user) return server;
  // The localhost exception: the first user, created without logging in.
  const auto created = server->anonymous().run(
      "admin", J(R"({"createUser": "admin", "pwd": "admin-pw", "roles": ["root"]})"));
  EXPECT_TRUE(created.ok) << created.message;
  server->admin_ = std::make_unique<test_client>(server->login("admin", "admin-pw"));
  return server;
}

std::string auth_server::uri(std::string_view user, std::string_view pwd,
                             std::string_view options) const {
  std::string u = "mongodb://" + std::string(user) + ":" + std::string(pwd) + "@" + host_port() +
                  "/?replicaSet=rs0&authSource=admin";
  if (!options.empty()) u += "&" + std::string(options);
  return u;
}

test_client auth_server::anonymous() const {
  auto c = test_client::connect(process_.uri());
  EXPECT_TRUE(c) << c.error().message;
  return std::move(c).value();
}

test_client auth_server::login(std::string_view user, std::string_view pwd,
                               std::string_view options) const {
  auto c = test_client::connect(uri(user, pwd, options));
  EXPECT_TRUE(c) << c.error().message;
  return std::move(c).value();
}

void auth_server::create_user(std::string_view user, std::string_view pwd,
                              std::string_view roles_json, std::string_view extra_json) {
  bson::document cmd{{"createUser", std::string(user)}, {"pwd", std::string(pwd)}};
  cmd.append("roles", A(roles_json));
  for (const auto& f : J(extra_json))
    cmd.append(f.name, f.val);
  const auto r = admin().run("admin", cmd);
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace mongo_emulator::test
