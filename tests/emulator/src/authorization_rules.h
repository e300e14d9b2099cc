#pragma once
// What each command needs, from MongoDB's checkAuthForOperation/doCheckAuthorization of that
// command (src/mongo/db/auth/authorization_checks.cpp, the commands' sources): whether it
// requires authentication at all, and the privileges it asks for. Stateless.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/expected.h"
#include "privilege_set.h"
#include "user_registry.h"
#include "wire_codec.h"

namespace mongo_emulator {

struct authorization_input {
  const request& req;
  const privilege_set& privileges;
  const std::optional<user_name>& user;
  const std::set<role_name>& roles;  // every role the user has, inherited ones included
  std::function<std::optional<std::string>(std::int64_t)> cursor_owner;  // "user@db"
};

// nullopt: allowed. An error with an empty message: refused with MongoDB's generic "not
// authorized on <db> to execute command { ... }". Any other error is answered as it is.
using authorization_verdict = std::optional<denormd::error>;

struct authorization_rule {
  bool requires_auth = true;
  // Empty: an authenticated connection may run it.
  std::function<authorization_verdict(const authorization_input&)> check;
};

// The rule for a command (by the name it was sent with); nullptr when there is none.
const authorization_rule* find_authorization_rule(std::string_view command);

// The name MongoDB's messages use for a command sent under an alias (findandmodify).
std::string_view canonical_command_name(std::string_view command);

}  // namespace mongo_emulator
