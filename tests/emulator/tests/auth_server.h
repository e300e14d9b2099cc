#pragma once
// A mongo-emulator started with --auth for one test, with its first user (root "admin",
// password "admin-pw") created through the localhost exception, and libmongoc clients that log
// in as a user. Lifecycle: one per test (the server stops with it). Not thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "emulator_fixture.h"

namespace mongo_emulator::test {

class auth_server {
 public:
  // nullptr (and a failed assertion) when the server does not start; `first_user` false leaves
  // the server without users.
  static std::unique_ptr<auth_server> start(const std::vector<std::string>& extra_args = {},
                                            bool first_user = true);

  const std::string& host_port() const { return process_.host_port(); }
  // mongodb://user:pwd@HOST:PORT/?replicaSet=rs0&authSource=admin[&options].
  std::string uri(std::string_view user, std::string_view pwd, std::string_view options = {}) const;
  // A client without credentials.
  test_client anonymous() const;
  test_client login(std::string_view user, std::string_view pwd,
                    std::string_view options = {}) const;
  // The root user's client.
  test_client& admin() { return *admin_; }
  // createUser on admin as root; `roles_json` is the roles array.
  void create_user(std::string_view user, std::string_view pwd, std::string_view roles_json,
                   std::string_view extra_json = "{}");

 private:
  explicit auth_server(denormd::test::emulator_process p) : process_(std::move(p)) {}

  denormd::test::emulator_process process_;
  std::unique_ptr<test_client> admin_;
};

}  // namespace mongo_emulator::test
