// User and role management as MongoDB 6.0's user_management_commands.cpp: createUser,
// updateUser, dropUser, usersInfo, grantRolesToUser, revokeRolesFromUser, createRole,
// updateRole, dropRole, rolesInfo. Users and roles live in the server's user_registry. The
// privileges each command needs are checked before it runs (authorization_rules.cc).

#include <algorithm>

#include "builtin_roles.h"
#include "command_args.h"
#include "command_authorizer.h"
#include "command_table.h"
#include "error_codes.h"
#include "query/matcher.h"
#include "query_operators.h"

namespace mongo_emulator {

namespace {

denormd::unexpected<denormd::error> bad_value(std::string message) {
  return fail(std::move(message), codes::bad_value);
}

denormd::unexpected<denormd::error> missing(std::string_view command, std::string_view field) {
  return fail("BSON field '" + std::string(command) + "." + std::string(field) +
                  "' is missing but a required field",
              codes::idl_failed_to_parse);
}

denormd::unexpected<denormd::error> not_implemented(std::string_view what) {
  return fail(
      "mongo-emulator does not implement " + std::string(what) + " (see tests/emulator/README.md)",
      codes::not_implemented);
}

command_outcome ok_reply(bson::document reply = {}) {
  reply.append("ok", 1.0);
  return command_result{std::move(reply), {}};
}

user_registry& registry(command_context& ctx) {
  return ctx.server.authorizer().users();
}

// The command's name argument (createUser: "name", ...): a non-empty string.
denormd::expected<std::string> name_arg(command_context& ctx) {
  const auto& v = ctx.body.fields().front().val;
  if (!v.is_string())
    return fail("BSON field '" + ctx.req.command + "." + ctx.req.command + "' is the wrong type '" +
                    std::string(bson::type_name(v.kind())) + "', expected type 'string'",
                codes::type_mismatch);
  if (v.as_string().empty()) return bad_value("Name cannot be empty");
  return v.as_string();
}

bson::binary new_uuid() {
  const std::string bytes = random_bytes(16);
  std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
  data[6] = (data[6] & 0x0f) | 0x40;  // version 4
  data[8] = (data[8] & 0x3f) | 0x80;  // RFC 4122 variant
  return bson::binary{4, std::move(data)};
}

// The mechanisms argument (default both), each a SCRAM mechanism this server knows.
denormd::expected<std::vector<scram_mechanism>> mechanisms_arg(const bson::document& body) {
  const auto* v = body.get("mechanisms");
  if (v == nullptr) return std::vector{scram_mechanism::sha1, scram_mechanism::sha256};
  if (!v->is_array()) return fail("mechanisms must be an array", codes::type_mismatch);
  if (v->as_array().empty()) return bad_value("mechanisms field must not be empty");
  std::vector<scram_mechanism> out;
  for (const auto& m : v->as_array()) {
    const auto parsed = m.is_string() ? parse_mechanism(m.as_string()) : std::nullopt;
    if (!parsed)
      return bad_value("Unknown auth mechanism '" + (m.is_string() ? m.as_string() : "") + "'");
    out.push_back(*parsed);
  }
  return out;
}

// SCRAM credentials for `password` (digestPassword: false means it is the SCRAM-SHA-1 digest
// already, which SCRAM-SHA-256 cannot use).
denormd::expected<std::map<scram_mechanism, scram_credentials>> credentials_for(
    const bson::document& body, const std::string& user, const bson::value& password) {
  if (!password.is_string()) return fail("pwd must be a string", codes::type_mismatch);
  if (password.as_string().empty()) return bad_value("User passwords must not be empty");
  auto mechanisms = mechanisms_arg(body);
  if (!mechanisms) return mechanisms.error();
  const auto* digest = body.get("digestPassword");
  const bool server_digests = digest == nullptr || !digest->is<bool>() || digest->as<bool>();
  std::map<scram_mechanism, scram_credentials> out;
  for (const auto m : *mechanisms) {
    if (m == scram_mechanism::sha256 && !server_digests)
      return bad_value("Use of SCRAM-SHA-256 requires undigested passwords");
    auto material = m == scram_mechanism::sha1 && !server_digests
                        ? denormd::expected<std::string>(password.as_string())
                        : scram_password(m, user, password.as_string());
    if (!material) return material.error();
    out[m] = make_scram_credentials(
        m, *material, m == scram_mechanism::sha1 ? sha1_iterations : sha256_iterations);
  }
  return out;
}

denormd::expected<std::optional<bson::document>> custom_data_arg(const bson::document& body) {
  const auto* v = body.get("customData");
  if (v == nullptr) return std::optional<bson::document>{};
  if (!v->is_document()) return fail("customData must be an object", codes::type_mismatch);
  return std::optional<bson::document>{v->as_document()};
}

denormd::expected<std::vector<role_name>> existing_roles(command_context& ctx,
                                                         std::string_view field) {
  const auto* v = ctx.body.get(field);
  if (v == nullptr) return missing(ctx.req.command, field);
  auto roles = parse_role_names(*v, ctx.db);
  if (!roles) return roles.error();
  if (auto ok = check_roles_exist(registry(ctx), *roles); !ok) return ok.error();
  return roles;
}

command_outcome create_user(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  if (ctx.db == "$external") return not_implemented("$external (x.509, LDAP) users");
  if (ctx.db == "local") return bad_value("Cannot create users in the local database");
  if (ctx.body.contains("authenticationRestrictions"))
    return not_implemented("authenticationRestrictions");
  const auto* pwd = ctx.body.get("pwd");
  if (pwd == nullptr)
    return bad_value(
        "Must provide a 'pwd' field for all user documents, except those with '$external' as "
        "the user's source db");
  auto roles = existing_roles(ctx, "roles");
  if (!roles) return roles.error();
  auto custom_data = custom_data_arg(ctx.body);
  if (!custom_data) return custom_data.error();
  auto credentials = credentials_for(ctx.body, *name, *pwd);
  if (!credentials) return credentials.error();
  user_record user{user_name{*name, ctx.db}, new_uuid(), std::move(credentials).value(),
                   std::move(roles).value(), std::move(custom_data).value()};
  if (auto added = registry(ctx).add_user(std::move(user)); !added) return added.error();
  return ok_reply();
}

command_outcome update_user(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  if (ctx.body.contains("authenticationRestrictions"))
    return not_implemented("authenticationRestrictions");
  const auto& b = ctx.body;
  if (!b.contains("pwd") && !b.contains("customData") && !b.contains("roles") &&
      !b.contains("mechanisms"))
    return bad_value("Must specify at least one field to update in updateUser");
  auto user = registry(ctx).user(user_name{*name, ctx.db});
  if (!user) return fail("User '" + *name + "@" + ctx.db + "' not found", codes::user_not_found);
  if (const auto* pwd = b.get("pwd")) {
    auto credentials = credentials_for(b, *name, *pwd);
    if (!credentials) return credentials.error();
    user->credentials = std::move(credentials).value();
  } else if (b.contains("mechanisms")) {
    // Without a password the mechanisms can only shrink to a subset of the current ones.
    auto mechanisms = mechanisms_arg(b);
    if (!mechanisms) return mechanisms.error();
    for (const auto m : *mechanisms) {
      if (!user->credentials.contains(m))
        return bad_value("mechanisms field must be a subset of previously set mechanisms");
    }
    std::erase_if(user->credentials, [&](const auto& c) {
      return std::find(mechanisms->begin(), mechanisms->end(), c.first) == mechanisms->end();
    });
  }
  if (b.contains("customData")) {
    auto custom_data = custom_data_arg(b);
    if (!custom_data) return custom_data.error();
    user->custom_data = std::move(custom_data).value();
  }
  if (b.contains("roles")) {
    auto roles = existing_roles(ctx, "roles");
    if (!roles) return roles.error();
    user->roles = std::move(roles).value();
  }
  if (auto replaced = registry(ctx).replace_user(std::move(*user)); !replaced)
    return replaced.error();
  return ok_reply();
}

command_outcome drop_user(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  if (auto removed = registry(ctx).remove_user(user_name{*name, ctx.db}); !removed)
    return removed.error();
  return ok_reply();
}

// grantRolesToUser / revokeRolesFromUser.
command_outcome change_user_roles(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  auto roles = existing_roles(ctx, "roles");
  if (!roles) return roles.error();
  auto user = registry(ctx).user(user_name{*name, ctx.db});
  if (!user)
    return fail("Could not find user \"" + *name + "\" for db \"" + ctx.db + "\"",
                codes::user_not_found);
  const bool grant = ctx.req.command == "grantRolesToUser";
  for (const auto& r : *roles) {
    const auto it = std::find(user->roles.begin(), user->roles.end(), r);
    if (grant && it == user->roles.end()) user->roles.push_back(r);
    if (!grant && it != user->roles.end()) user->roles.erase(it);
  }
  if (auto replaced = registry(ctx).replace_user(std::move(*user)); !replaced)
    return replaced.error();
  return ok_reply();
}

bson::array role_documents(const std::vector<role_name>& roles) {
  bson::array out;
  for (const auto& r : roles)
    out.emplace_back(r.to_document());
  return out;
}

bson::array role_documents(const std::set<role_name>& roles) {
  return role_documents(std::vector<role_name>(roles.begin(), roles.end()));
}

bson::document credentials_document(const user_record& u) {
  bson::document out;
  for (const auto& [m, c] : u.credentials) {
    out.append(std::string(mechanism_name(m)), bson::document{{"iterationCount", c.iteration_count},
                                                              {"salt", c.salt},
                                                              {"storedKey", c.stored_key},
                                                              {"serverKey", c.server_key}});
  }
  return out;
}

struct info_options {
  bool credentials = false;
  bool privileges = false;
  bool custom_data = true;
  bool restrictions = false;
};

denormd::expected<info_options> info_options_of(const bson::document& body) {
  info_options o;
  for (auto [field, target] :
       {std::pair{"showCredentials", &o.credentials}, std::pair{"showPrivileges", &o.privileges},
        std::pair{"showCustomData", &o.custom_data},
        std::pair{"showAuthenticationRestrictions", &o.restrictions}}) {
    auto v = bool_arg(body, field);
    if (!v) return v.error();
    if (*v) *target = **v;
  }
  return o;
}

// A usersInfo document, in the field order MongoDB 6.0 gives (the stored user document with
// its credentials turned into `mechanisms`).
bson::document user_document(const user_record& u, const info_options& o,
                             const user_registry& users) {
  bson::array mechanisms;
  for (const auto& [m, c] : u.credentials)
    mechanisms.emplace_back(mechanism_name(m));
  bson::document d;
  d.append("_id", u.name.db + "." + u.name.user);
  d.append("userId", u.user_id);
  d.append("user", u.name.user);
  d.append("db", u.name.db);
  if (o.privileges) d.append("mechanisms", mechanisms);
  if (o.credentials) d.append("credentials", credentials_document(u));
  if (o.custom_data && u.custom_data) d.append("customData", *u.custom_data);
  d.append("roles", role_documents(u.roles));
  if (o.restrictions) d.append("authenticationRestrictions", bson::array{});
  if (!o.privileges) {
    d.append("mechanisms", std::move(mechanisms));
    return d;
  }
  const resolved_roles resolved = users.resolve(u.roles);
  d.append("inheritedRoles", role_documents(resolved.roles));
  d.append("inheritedPrivileges", resolved.privileges.to_array());
  if (o.restrictions) d.append("inheritedAuthenticationRestrictions", bson::array{});
  return d;
}

// The users usersInfo names: 1 (the database's), {forAllDBs: true}, or names.
denormd::expected<std::vector<user_record>> users_named(command_context& ctx) {
  const auto& arg = ctx.body.fields().front().val;
  const user_registry& users = registry(ctx);
  if (arg.is_number()) return users.users(ctx.db);
  if (arg.is_document() && arg.as_document().contains("forAllDBs"))
    return users.users(std::nullopt);
  const bson::array names = arg.is_array() ? arg.as_array() : bson::array{arg};
  std::vector<user_record> out;
  for (const auto& v : names) {
    auto name = parse_qualified_name(v, "user", ctx.db);
    if (!name) return name.error();
    if (auto u = users.user(user_name{name->first, name->second})) out.push_back(std::move(*u));
  }
  return out;
}

command_outcome users_info(command_context& ctx) {
  auto options = info_options_of(ctx.body);
  if (!options) return options.error();
  auto filter = document_arg(ctx.body, "filter");
  if (!filter) return filter.error();
  auto users = users_named(ctx);
  if (!users) return users.error();
  denormd::query::matcher m;
  if (*filter != nullptr) {
    auto compiled = engine::compile_query(**filter);
    if (!compiled) return fail(compiled.error().message, compiled.error().code);
    m = std::move(compiled).value();
  }
  bson::array out;
  for (const auto& u : *users) {
    bson::document d = user_document(u, *options, registry(ctx));
    if (*filter == nullptr || m.matches(d)) out.emplace_back(std::move(d));
  }
  return ok_reply(bson::document{{"users", std::move(out)}});
}

// createRole's and updateRole's privileges.
denormd::expected<std::vector<privilege>> privileges_arg(const bson::value& v) {
  if (!v.is_array()) return fail("privileges must be an array", codes::type_mismatch);
  std::vector<privilege> out;
  for (const auto& p : v.as_array()) {
    auto parsed = privilege::parse(p);
    if (!parsed) return parsed.error();
    out.push_back(std::move(parsed).value());
  }
  return out;
}

// A role outside admin may only hold privileges on, and inherit roles of, its own database.
denormd::status check_role_scope(const std::string& db, const std::vector<privilege>& privileges,
                                 const std::vector<role_name>& roles) {
  if (db == "admin") return {};
  for (const auto& p : privileges) {
    const auto& r = p.resource;
    const bool own =
        (r.k == resource_pattern::kind::database || r.k == resource_pattern::kind::exact) &&
        r.db == db;
    if (!own)
      return bad_value("Roles on the '" + db +
                       "' database cannot be granted privileges that target other databases or "
                       "the cluster");
  }
  for (const auto& r : roles) {
    if (r.db != db)
      return bad_value("Roles on the '" + db +
                       "' database cannot be granted roles from other databases");
  }
  return {};
}

command_outcome create_role(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  if (ctx.db == "$external") return bad_value("Cannot create roles in the $external database");
  if (is_builtin_role(*name, ctx.db))
    return bad_value("Cannot create roles with the same name as a built-in role");
  if (ctx.body.contains("authenticationRestrictions"))
    return not_implemented("authenticationRestrictions");
  const auto* privileges_value = ctx.body.get("privileges");
  if (privileges_value == nullptr) return missing("createRole", "privileges");
  auto privileges = privileges_arg(*privileges_value);
  if (!privileges) return privileges.error();
  auto roles = existing_roles(ctx, "roles");
  if (!roles) return roles.error();
  if (auto scoped = check_role_scope(ctx.db, *privileges, *roles); !scoped) return scoped.error();
  role_record role{role_name{*name, ctx.db}, std::move(privileges).value(),
                   std::move(roles).value()};
  if (auto added = registry(ctx).add_role(std::move(role)); !added) return added.error();
  return ok_reply();
}

command_outcome update_role(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  const role_name id{*name, ctx.db};
  if (is_builtin_role(*name, ctx.db)) return bad_value("Cannot update built-in roles");
  if (ctx.body.contains("authenticationRestrictions"))
    return not_implemented("authenticationRestrictions");
  if (!ctx.body.contains("privileges") && !ctx.body.contains("roles"))
    return bad_value("Must specify at least one field to update in updateRole");
  auto role = registry(ctx).role(id);
  if (!role) return fail("Role '" + id.to_string() + "' not found", codes::role_not_found);
  if (const auto* v = ctx.body.get("privileges")) {
    auto privileges = privileges_arg(*v);
    if (!privileges) return privileges.error();
    role->privileges = std::move(privileges).value();
  }
  if (ctx.body.contains("roles")) {
    auto roles = existing_roles(ctx, "roles");
    if (!roles) return roles.error();
    if (registry(ctx).would_cycle(id, *roles))
      return fail(
          "Granting roles to " + id.to_string() + " would introduce a cycle in the role graph",
          codes::invalid_role_modification);
    role->roles = std::move(roles).value();
  }
  if (auto scoped = check_role_scope(ctx.db, role->privileges, role->roles); !scoped)
    return scoped.error();
  if (auto replaced = registry(ctx).replace_role(std::move(*role)); !replaced)
    return replaced.error();
  return ok_reply();
}

command_outcome drop_role(command_context& ctx) {
  auto name = name_arg(ctx);
  if (!name) return name.error();
  if (is_builtin_role(*name, ctx.db)) return bad_value("Cannot drop built-in roles");
  if (auto removed = registry(ctx).remove_role(role_name{*name, ctx.db}); !removed)
    return removed.error();
  return ok_reply();
}

struct roles_info_options {
  bool privileges = false;
  bool builtin = false;
  bool restrictions = false;
};

// A user-defined role as rolesInfo shows it: the stored document (_id, role, db, privileges,
// roles), then what it inherits. Listing a database puts isBuiltin before the inherited fields,
// naming roles after them (AuthzManagerExternalStateLocal's two paths).
bson::document defined_role_document(const role_record& r, const roles_info_options& o, bool listed,
                                     const user_registry& users) {
  bson::array own;
  privilege_set inherited;
  for (const auto& p : r.privileges) {
    own.emplace_back(p.to_document());
    inherited.add(p);
  }
  const resolved_roles resolved = users.resolve(r.roles);
  inherited.add(resolved.privileges);
  bson::document d;
  d.append("_id", r.name.db + "." + r.name.role);
  d.append("role", r.name.role);
  d.append("db", r.name.db);
  if (o.privileges) d.append("privileges", std::move(own));
  d.append("roles", role_documents(r.roles));
  if (o.restrictions) d.append("authenticationRestrictions", bson::array{});
  if (listed) d.append("isBuiltin", false);
  d.append("inheritedRoles", role_documents(resolved.roles));
  if (o.privileges) d.append("inheritedPrivileges", inherited.to_array());
  if (o.restrictions) d.append("inheritedAuthenticationRestrictions", bson::array{});
  if (!listed) d.append("isBuiltin", false);
  return d;
}

bson::document builtin_role_document(const std::string& role, const std::string& db,
                                     const roles_info_options& o, bool listed) {
  const bson::array privileges = builtin_role_privileges(role, db)->to_array();
  bson::document d;
  if (listed) {
    d.append("role", role);
    d.append("db", db);
    d.append("isBuiltin", true);
  } else {
    d.append("db", db);
    d.append("role", role);
  }
  d.append("roles", bson::array{});
  if (!listed && o.privileges) d.append("privileges", privileges);
  if (!listed && o.restrictions) d.append("authenticationRestrictions", bson::array{});
  d.append("inheritedRoles", bson::array{});
  if (listed && o.privileges) d.append("privileges", privileges);
  if (o.privileges) d.append("inheritedPrivileges", privileges);
  if (listed && o.restrictions) d.append("authenticationRestrictions", bson::array{});
  if (o.restrictions) d.append("inheritedAuthenticationRestrictions", bson::array{});
  if (!listed) d.append("isBuiltin", true);
  return d;
}

denormd::expected<roles_info_options> roles_info_options_of(const bson::document& body) {
  roles_info_options o;
  if (const auto* show = body.get("showPrivileges"); show != nullptr && show->is_string())
    return not_implemented("rolesInfo's showPrivileges: \"asUserFragment\"");
  for (auto [field, target] :
       {std::pair{"showPrivileges", &o.privileges}, std::pair{"showBuiltinRoles", &o.builtin},
        std::pair{"showAuthenticationRestrictions", &o.restrictions}}) {
    auto v = bool_arg(body, field);
    if (!v) return v.error();
    if (*v) *target = **v;
  }
  return o;
}

command_outcome roles_info(command_context& ctx) {
  auto o = roles_info_options_of(ctx.body);
  if (!o) return o.error();
  const user_registry& users = registry(ctx);
  const auto& arg = ctx.body.fields().front().val;
  bson::array out;
  if (arg.is_number()) {
    if (o->builtin) {
      for (const auto& name : builtin_role_names(ctx.db))
        out.emplace_back(builtin_role_document(name, ctx.db, *o, true));
    }
    for (const auto& r : users.roles(ctx.db))
      out.emplace_back(defined_role_document(r, *o, true, users));
    return ok_reply(bson::document{{"roles", std::move(out)}});
  }
  const bson::array names = arg.is_array() ? arg.as_array() : bson::array{arg};
  for (const auto& v : names) {
    auto name = parse_qualified_name(v, "role", ctx.db);
    if (!name) return name.error();
    if (is_builtin_role(name->first, name->second)) {
      out.emplace_back(builtin_role_document(name->first, name->second, *o, false));
    } else if (auto r = users.role(role_name{name->first, name->second})) {
      out.emplace_back(defined_role_document(*r, *o, false, users));
    }
  }
  return ok_reply(bson::document{{"roles", std::move(out)}});
}

}  // namespace

void register_user_commands(command_table& table) {
  table["createUser"] = {create_user, false, false, on_secondary::never};
  table["updateUser"] = {update_user, false, false, on_secondary::never};
  table["dropUser"] = {drop_user, false, false, on_secondary::never};
  table["grantRolesToUser"] = {change_user_roles, false, false, on_secondary::never};
  table["revokeRolesFromUser"] = {change_user_roles, false, false, on_secondary::never};
  table["usersInfo"] = {users_info};
  table["createRole"] = {create_role, false, false, on_secondary::never};
  table["updateRole"] = {update_role, false, false, on_secondary::never};
  table["dropRole"] = {drop_role, false, false, on_secondary::never};
  table["rolesInfo"] = {roles_info};
}

}  // namespace mongo_emulator
