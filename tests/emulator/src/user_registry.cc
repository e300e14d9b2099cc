#include "user_registry.h"

#include <algorithm>
#include <tuple>

#include "builtin_roles.h"
#include "error_codes.h"

namespace mongo_emulator {

namespace {

denormd::unexpected<denormd::error> user_not_found(const user_name& name) {
  return denormd::fail("User '" + name.to_string() + "' not found", codes::user_not_found);
}

denormd::unexpected<denormd::error> role_not_found(const role_name& name) {
  return denormd::fail("Role '" + name.to_string() + "' not found", codes::role_not_found);
}

}  // namespace

denormd::status user_registry::add_user(user_record user) {
  std::lock_guard lock(mutex_);
  const user_name name = user.name;
  if (!users_.emplace(name, std::move(user)).second)
    return denormd::fail("User \"" + name.to_string() + "\" already exists", 51003);
  ++generation_;
  return {};
}

denormd::status user_registry::replace_user(user_record user) {
  std::lock_guard lock(mutex_);
  auto it = users_.find(user.name);
  if (it == users_.end()) return user_not_found(user.name);
  it->second = std::move(user);
  ++generation_;
  return {};
}

denormd::status user_registry::remove_user(const user_name& name) {
  std::lock_guard lock(mutex_);
  if (users_.erase(name) == 0) return user_not_found(name);
  ++generation_;
  return {};
}

std::optional<user_record> user_registry::user(const user_name& name) const {
  std::lock_guard lock(mutex_);
  auto it = users_.find(name);
  if (it == users_.end()) return std::nullopt;
  return it->second;
}

std::vector<user_record> user_registry::users(const std::optional<std::string>& db) const {
  std::vector<user_record> out;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, record] : users_) {
      if (!db || name.db == *db) out.push_back(record);
    }
  }
  // usersInfo sorts by {user: 1, db: 1}.
  std::sort(out.begin(), out.end(), [](const user_record& a, const user_record& b) {
    return std::tie(a.name.user, a.name.db) < std::tie(b.name.user, b.name.db);
  });
  return out;
}

denormd::status user_registry::add_role(role_record role) {
  std::lock_guard lock(mutex_);
  const role_name name = role.name;
  if (!roles_.emplace(name, std::move(role)).second)
    return denormd::fail("Role \"" + name.to_string() + "\" already exists", 51002);
  ++generation_;
  return {};
}

denormd::status user_registry::replace_role(role_record role) {
  std::lock_guard lock(mutex_);
  auto it = roles_.find(role.name);
  if (it == roles_.end()) return role_not_found(role.name);
  it->second = std::move(role);
  ++generation_;
  return {};
}

denormd::status user_registry::remove_role(const role_name& name) {
  std::lock_guard lock(mutex_);
  if (roles_.erase(name) == 0) return role_not_found(name);
  const auto drop = [&](std::vector<role_name>& roles) { std::erase(roles, name); };
  for (auto& [n, u] : users_)
    drop(u.roles);
  for (auto& [n, r] : roles_)
    drop(r.roles);
  ++generation_;
  return {};
}

std::optional<role_record> user_registry::role(const role_name& name) const {
  std::lock_guard lock(mutex_);
  auto it = roles_.find(name);
  if (it == roles_.end()) return std::nullopt;
  return it->second;
}

std::vector<role_record> user_registry::roles(const std::string& db) const {
  std::lock_guard lock(mutex_);
  std::vector<role_record> out;
  for (const auto& [name, record] : roles_) {
    if (name.db == db) out.push_back(record);
  }
  return out;
}

bool user_registry::role_exists(const role_name& name) const {
  if (is_builtin_role(name.role, name.db)) return true;
  std::lock_guard lock(mutex_);
  return roles_.contains(name);
}

bool user_registry::would_cycle(const role_name& name,
                                const std::vector<role_name>& inherited) const {
  std::lock_guard lock(mutex_);
  return resolve_locked(inherited).roles.contains(name);
}

resolved_roles user_registry::resolve(const std::vector<role_name>& direct) const {
  std::lock_guard lock(mutex_);
  return resolve_locked(direct);
}

// A breadth-first walk of the role graph, as AuthzManagerExternalStateLocal::resolveRoles.
resolved_roles user_registry::resolve_locked(const std::vector<role_name>& direct) const {
  resolved_roles out;
  std::vector<role_name> frontier = direct;
  while (!frontier.empty()) {
    std::vector<role_name> next;
    for (const auto& name : frontier) {
      if (!out.roles.insert(name).second) continue;
      if (auto builtin = builtin_role_privileges(name.role, name.db)) {
        out.privileges.add(*builtin);
        continue;
      }
      const auto it = roles_.find(name);
      if (it == roles_.end()) continue;  // dropped meanwhile: MongoDB skips it too
      for (const auto& p : it->second.privileges)
        out.privileges.add(p);
      next.insert(next.end(), it->second.roles.begin(), it->second.roles.end());
    }
    frontier = std::move(next);
  }
  return out;
}

bool user_registry::empty() const {
  std::lock_guard lock(mutex_);
  return users_.empty() && roles_.empty();
}

std::uint64_t user_registry::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

denormd::status check_roles_exist(const user_registry& registry,
                                  const std::vector<role_name>& names) {
  for (const auto& name : names) {
    if (!registry.role_exists(name))
      return denormd::fail("Could not find role: " + name.to_string(), codes::role_not_found);
  }
  return {};
}

denormd::expected<std::pair<std::string, std::string>> parse_qualified_name(
    const bson::value& v, std::string_view key, const std::string& default_db) {
  if (v.is_string()) return std::pair{v.as_string(), default_db};
  if (v.is_document()) {
    const auto* name = v.as_document().get(key);
    const auto* db = v.as_document().get("db");
    if (name != nullptr && name->is_string() && db != nullptr && db->is_string())
      return std::pair{name->as_string(), db->as_string()};
  }
  return denormd::fail(
      "Expected a string or a document with '" + std::string(key) + "' and 'db' strings",
      codes::bad_value);
}

denormd::expected<std::vector<role_name>> parse_role_names(const bson::value& roles,
                                                           const std::string& default_db) {
  if (!roles.is_array()) return denormd::fail("roles must be an array", codes::type_mismatch);
  std::vector<role_name> out;
  for (const auto& r : roles.as_array()) {
    auto name = parse_qualified_name(r, "role", default_db);
    if (!name) return name.error();
    out.push_back(role_name{std::move(name->first), std::move(name->second)});
  }
  return out;
}

}  // namespace mongo_emulator
