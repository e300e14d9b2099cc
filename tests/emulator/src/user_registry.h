#pragma once
// The users and user-defined roles of the server (MongoDB keeps them in admin.system.users and
// admin.system.roles; here they live beside the data, not in it), and role resolution: a user's
// roles, the roles those inherit, and the union of their privileges (built-in roles included).
// Lifecycle: one per server (server_state). Thread-safe (one mutex; lookups return copies).

#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "privilege_set.h"
#include "scram.h"

namespace mongo_emulator {

struct role_name {
  std::string role;
  std::string db;
  std::string to_string() const { return role + "@" + db; }
  bson::document to_document() const { return bson::document{{"role", role}, {"db", db}}; }
  auto operator<=>(const role_name&) const = default;
  bool operator==(const role_name&) const = default;
};

struct user_name {
  std::string user;
  std::string db;
  std::string to_string() const { return user + "@" + db; }
  auto operator<=>(const user_name&) const = default;
  bool operator==(const user_name&) const = default;
};

struct user_record {
  user_name name;
  bson::binary user_id;  // a UUID, as MongoDB's userId
  std::map<scram_mechanism, scram_credentials> credentials;
  std::vector<role_name> roles;
  std::optional<bson::document> custom_data;
};

struct role_record {
  role_name name;
  std::vector<privilege> privileges;  // as given to createRole/updateRole
  std::vector<role_name> roles;
};

// What a set of direct roles amounts to.
struct resolved_roles {
  std::set<role_name> roles;  // the direct roles and every role they inherit
  privilege_set privileges;
};

class user_registry {
 public:
  // 51003 "User \"u@db\" already exists".
  denormd::status add_user(user_record user);
  // 11 UserNotFound "User 'u@db' not found".
  denormd::status replace_user(user_record user);
  denormd::status remove_user(const user_name& name);
  std::optional<user_record> user(const user_name& name) const;
  // Sorted by user name then database; every database when `db` is nullopt.
  std::vector<user_record> users(const std::optional<std::string>& db) const;

  // 51002 "Role \"r@db\" already exists".
  denormd::status add_role(role_record role);
  // 31 RoleNotFound "Role 'r@db' not found".
  denormd::status replace_role(role_record role);
  // Also takes the role away from every user and role that has it, as dropRole does.
  denormd::status remove_role(const role_name& name);
  std::optional<role_record> role(const role_name& name) const;
  std::vector<role_record> roles(const std::string& db) const;
  // A built-in role or a user-defined one.
  bool role_exists(const role_name& name) const;
  // Whether making `name` inherit `inherited` would make it inherit itself.
  bool would_cycle(const role_name& name, const std::vector<role_name>& inherited) const;

  // The roles `direct` amounts to, and their privileges; unknown roles are skipped.
  resolved_roles resolve(const std::vector<role_name>& direct) const;

  // No user and no role: the localhost exception applies.
  bool empty() const;
  // Changes with every modification, so sessions know when their cached privileges are stale.
  std::uint64_t generation() const;

 private:
  resolved_roles resolve_locked(const std::vector<role_name>& direct) const;

  mutable std::mutex mutex_;
  std::map<user_name, user_record> users_;
  std::map<role_name, role_record> roles_;
  std::uint64_t generation_ = 0;
};

// A `roles` argument: names ("read", meaning read@default_db) or {role, db} documents.
denormd::expected<std::vector<role_name>> parse_role_names(const bson::value& roles,
                                                           const std::string& default_db);
// A usersInfo/rolesInfo-style name: "name" (in default_db) or {<key>: name, db}.
denormd::expected<std::pair<std::string, std::string>> parse_qualified_name(
    const bson::value& v, std::string_view key, const std::string& default_db);

// "Could not find role: r@db" (31) for the first role in `names` that does not exist.
denormd::status check_roles_exist(const user_registry& registry,
                                  const std::vector<role_name>& names);

}  // namespace mongo_emulator
