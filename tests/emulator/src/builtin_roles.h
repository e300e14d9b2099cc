#pragma once
// MongoDB's built-in roles and their privileges, as src/mongo/db/auth/builtin_roles.cpp (5.0;
// 6.0 generates the same from builtin_roles.yml) defines them: read, readWrite, dbAdmin,
// userAdmin, dbOwner and enableSharding in every database; the *AnyDatabase roles,
// clusterMonitor, hostManager, clusterManager, clusterAdmin, backup, restore, root and __system
// in admin only. Stateless.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "privilege_set.h"

namespace mongo_emulator {

// `role` is a built-in role of database `db` (the admin-only ones exist only in admin).
bool is_builtin_role(std::string_view role, std::string_view db);

// The privileges of a built-in role; nullopt when it is not one.
std::optional<privilege_set> builtin_role_privileges(std::string_view role, std::string_view db);

// The built-in roles of `db`, sorted by name (rolesInfo's showBuiltinRoles).
std::vector<std::string> builtin_role_names(std::string_view db);

}  // namespace mongo_emulator
