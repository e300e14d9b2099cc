#include "authorization_rules.h"

#include <map>
#include <utility>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

using rp = resource_pattern;
using input = authorization_input;
using verdict = authorization_verdict;

const verdict allowed = std::nullopt;

verdict refused() {
  return denormd::error{"", codes::unauthorized};
}

verdict require(const input& in, const rp& target, const action_set& actions) {
  return in.privileges.allows(target, actions) ? allowed : refused();
}

// BSONElement::trueValue.
bool true_value(const bson::value* v) {
  if (v == nullptr || v->is_null() || v->is<bson::undefined_t>()) return false;
  if (v->is<bool>()) return v->as<bool>();
  if (v->is_number()) return v->to_double() != 0;
  return true;
}

// The collection a command names first, when it names one.
std::optional<rp> target_collection(const input& in) {
  if (in.req.body.empty()) return std::nullopt;
  const auto& first = in.req.body.fields().front().val;
  if (!first.is_string()) return std::nullopt;
  return rp::exact(in.req.db, first.as_string());
}

// A rule asking for `actions` on the command's collection. A command whose first field is not
// a collection name fails to parse on MongoDB before any privilege is checked: the handler
// gives that error here.
authorization_rule on_collection(std::initializer_list<std::string_view> actions) {
  const action_set wanted = actions_of(actions);
  return {true, [wanted](const input& in) {
            const auto target = target_collection(in);
            return target ? require(in, *target, wanted) : allowed;
          }};
}

authorization_rule on_database(std::string_view action) {
  const action_set wanted = actions_of({action});
  return {true, [wanted](const input& in) { return require(in, rp::database(in.req.db), wanted); }};
}

authorization_rule on_cluster(std::string_view action) {
  const action_set wanted = actions_of({action});
  return {true, [wanted](const input& in) { return require(in, rp::cluster(), wanted); }};
}

// A write's actions, with bypassDocumentValidation when the command asks to bypass it.
action_set with_bypass(const input& in, action_set actions) {
  if (true_value(in.req.body.get("bypassDocumentValidation")))
    actions |= actions_of({"bypassDocumentValidation"});
  return actions;
}

verdict write_rule(const input& in, const action_set& actions) {
  const auto target = target_collection(in);
  return target ? require(in, *target, with_bypass(in, actions)) : allowed;
}

// checkAuthForUpdate: update, and insert when a statement upserts.
verdict update_rule(const input& in) {
  action_set actions = actions_of({"update"});
  if (const auto* updates = in.req.body.get("updates"); updates != nullptr && updates->is_array()) {
    for (const auto& u : updates->as_array()) {
      if (u.is_document() && true_value(u.as_document().get("upsert")))
        actions |= actions_of({"insert"});
    }
  }
  return write_rule(in, actions);
}

// findAndModify: find, plus update, insert (upsert) and remove as the command asks.
verdict find_and_modify_rule(const input& in) {
  action_set actions = actions_of({"find"});
  if (true_value(in.req.body.get("update"))) actions |= actions_of({"update"});
  if (true_value(in.req.body.get("upsert"))) actions |= actions_of({"insert"});
  if (true_value(in.req.body.get("remove"))) actions |= actions_of({"remove"});
  return write_rule(in, actions);
}

// getPrivilegesForAggregate: find on the collection unless the first stage is a source of its
// own; $changeStream asks for changeStream and find on the collection, the database
// (aggregate: 1) or every normal collection (aggregate: 1 on admin, the whole cluster).
verdict aggregate_rule(const input& in) {
  const auto collection = target_collection(in);
  const auto* pipeline = in.req.body.get("pipeline");
  if (pipeline == nullptr || !pipeline->is_array()) return allowed;  // a parse error follows
  const auto& stages = pipeline->as_array();
  std::string first;
  if (!stages.empty() && stages.front().is_document() && !stages.front().as_document().empty())
    first = stages.front().as_document().fields().front().name;
  if (first == "$changeStream") {
    const rp target = collection             ? *collection
                      : in.req.db == "admin" ? rp::any_normal()
                                             : rp::database(in.req.db);
    return require(in, target, actions_of({"changeStream", "find"}));
  }
  if (first == "$documents") return allowed;  // an initial source that reads no collection
  if (!collection) return allowed;            // collectionless otherwise: a parse error follows
  if (first == "$collStats") return require(in, *collection, actions_of({"collStats"}));
  if (first == "$indexStats") return require(in, rp::any_normal(), actions_of({"indexStats"}));
  return require(in, *collection, actions_of({"find"}));
}

// checkAuthForCreate: createCollection or insert (convertToCapped too for a capped one; a view
// needs createCollection).
verdict create_rule(const input& in) {
  const auto target = target_collection(in);
  if (!target) return allowed;
  if (true_value(in.req.body.get("capped")) &&
      !in.privileges.allows(*target, actions_of({"convertToCapped"})))
    return refused();
  const bool create = in.privileges.allows(*target, actions_of({"createCollection"}));
  if (in.req.body.contains("viewOn")) return create ? allowed : refused();
  return create || in.privileges.allows(*target, actions_of({"insert"})) ? allowed : refused();
}

std::optional<rp> full_namespace(const bson::value* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  const std::string& ns = v->as_string();
  const auto dot = ns.find('.');
  if (dot == std::string::npos) return std::nullopt;
  return rp::exact(ns.substr(0, dot), ns.substr(dot + 1));
}

// checkAuthForRenameCollectionCommand.
verdict rename_rule(const input& in) {
  const auto source =
      full_namespace(in.req.body.fields().empty() ? nullptr : &in.req.body.fields().front().val);
  const auto target = full_namespace(in.req.body.get("to"));
  if (!source || !target) return allowed;  // a parse error follows
  const bool drop_target = true_value(in.req.body.get("dropTarget"));
  const auto& p = in.privileges;
  if (source->db == target->db && is_normal_collection(source->db, source->coll) &&
      is_normal_collection(target->db, target->coll)) {
    const bool can_rename =
        p.allows(rp::database(source->db), actions_of({"renameCollectionSameDB"}));
    const bool can_drop = !drop_target || p.allows(*target, actions_of({"dropCollection"}));
    const bool read_source = p.allows(*source, actions_of({"find"}));
    const bool read_target = p.allows(*target, actions_of({"find"}));
    if (can_rename && can_drop && (read_source || !read_target)) return allowed;
  }
  if (!p.allows(*source, actions_of({"find", "dropCollection"}))) return refused();
  action_set target_actions = actions_of({"insert", "createIndex"});
  if (drop_target) target_actions |= actions_of({"dropCollection"});
  return require(in, *target, target_actions);
}

// checkAuthorizedToListCollections: listCollections on the database, or authorizedCollections
// with nameOnly for a user with some privilege in it (the listing is then filtered).
verdict list_collections_rule(const input& in) {
  if (true_value(in.req.body.get("authorizedCollections")) &&
      true_value(in.req.body.get("nameOnly")) && in.privileges.any_action_in_db(in.req.db))
    return allowed;
  return require(in, rp::database(in.req.db), actions_of({"listCollections"}));
}

// listDatabases runs for any authenticated user and lists what it may see, unless it asks for
// authorizedDatabases: false without the privilege.
verdict list_databases_rule(const input& in) {
  const auto* authorized = in.req.body.get("authorizedDatabases");
  if (authorized != nullptr && !true_value(authorized) &&
      !in.privileges.allows(rp::cluster(), actions_of({"listDatabases"})))
    return denormd::error{"Insufficient permissions to list all databases", codes::unauthorized};
  return allowed;
}

std::string owner_text(const input& in) {
  return in.user ? in.user->to_string() : std::string();
}

// A user can only getMore its own cursors.
verdict get_more_rule(const input& in) {
  const auto& first = in.req.body.fields().front().val;
  if (!first.is<std::int64_t>()) return allowed;
  const std::int64_t id = first.as<std::int64_t>();
  const auto owner = in.cursor_owner(id);
  if (owner && *owner != owner_text(in))
    return denormd::error{
        "cursor id " + std::to_string(id) + " was not created by the authenticated user",
        codes::unauthorized};
  return allowed;
}

// checkAuthForKillCursors: one's own cursors, or killAnyCursor on the cluster or the namespace.
verdict kill_cursors_rule(const input& in) {
  const auto target = target_collection(in);
  const auto* ids = in.req.body.get("cursors");
  if (!target || ids == nullptr || !ids->is_array()) return allowed;
  const action_set kill_any = actions_of({"killAnyCursor"});
  for (const auto& v : ids->as_array()) {
    if (!v.is<std::int64_t>()) continue;
    const auto owner = in.cursor_owner(v.as<std::int64_t>());
    if (!owner || *owner == owner_text(in)) continue;
    if (!in.privileges.allows(rp::cluster(), kill_any) && !in.privileges.allows(*target, kill_any))
      return refused();
  }
  return allowed;
}

authorization_rule no_authentication() {
  return {false, {}};
}

authorization_rule authenticated() {
  return {true, {}};
}

// User and role management (user_management_commands.cpp): the role arguments of a command;
// nullopt when malformed (the handler gives the error).
std::optional<std::vector<role_name>> roles_arg(const input& in, std::string_view field) {
  const auto* v = in.req.body.get(field);
  if (v == nullptr) return std::vector<role_name>{};
  auto names = parse_role_names(*v, in.req.db);
  if (!names) return std::nullopt;
  return std::move(names).value();
}

// isAuthorizedToGrantRole/isAuthorizedToRevokeRole: the action on each role's database.
bool on_role_dbs(const input& in, const std::vector<role_name>& roles, std::string_view action) {
  for (const auto& r : roles) {
    if (!in.privileges.allows(rp::database(r.db), action)) return false;
  }
  return true;
}

// checkAuthorizedToGrantPrivilege: grantRole on the privilege's database, or on admin for one
// that spans databases or the cluster.
bool may_grant_privileges(const input& in) {
  const auto* privileges = in.req.body.get("privileges");
  if (privileges == nullptr || !privileges->is_array()) return true;
  for (const auto& v : privileges->as_array()) {
    const auto p = privilege::parse(v);
    if (!p) continue;
    const auto& r = p->resource;
    const bool one_db = r.k == rp::kind::database || r.k == rp::kind::exact;
    if (!in.privileges.allows(rp::database(one_db ? r.db : "admin"), "grantRole")) return false;
  }
  return true;
}

bool restrictions_allowed(const input& in) {
  return !in.req.body.contains("authenticationRestrictions") ||
         in.privileges.allows(rp::database(in.req.db), "setAuthenticationRestriction");
}

verdict create_user_rule(const input& in) {
  const auto roles = roles_arg(in, "roles");
  if (!roles) return allowed;
  const bool ok = in.privileges.allows(rp::database(in.req.db), "createUser") &&
                  on_role_dbs(in, *roles, "grantRole") && restrictions_allowed(in);
  return ok ? allowed : refused();
}

bool is_self(const input& in) {
  const auto* name = in.req.body.get("updateUser");
  return in.user && name != nullptr && name->is_string() &&
         *in.user == user_name{name->as_string(), in.req.db};
}

// Changing a field takes the action on the user's database, or the "own" action for oneself.
bool may_change(const input& in, std::string_view field, std::string_view action,
                std::string_view own_action) {
  if (!in.req.body.contains(field)) return true;
  const rp db = rp::database(in.req.db);
  return in.privileges.allows(db, action) || (is_self(in) && in.privileges.allows(db, own_action));
}

verdict update_user_rule(const input& in) {
  const auto roles = roles_arg(in, "roles");
  if (!roles) return allowed;
  if (!may_change(in, "pwd", "changePassword", "changeOwnPassword") ||
      !may_change(in, "customData", "changeCustomData", "changeOwnCustomData") ||
      !restrictions_allowed(in))
    return refused();
  // Setting the roles array may revoke any role: MongoDB asks for revokeRole everywhere.
  if (in.req.body.contains("roles") && (!in.privileges.allows(rp::any_normal(), "revokeRole") ||
                                        !on_role_dbs(in, *roles, "grantRole")))
    return refused();
  return allowed;
}

verdict create_or_update_role_rule(const input& in, bool update) {
  const auto roles = roles_arg(in, "roles");
  if (!roles) return allowed;
  const bool may_set = update ? in.privileges.allows(rp::any_normal(), "revokeRole")
                              : in.privileges.allows(rp::database(in.req.db), "createRole");
  const bool ok = may_set && on_role_dbs(in, *roles, "grantRole") && may_grant_privileges(in) &&
                  restrictions_allowed(in);
  return ok ? allowed : refused();
}

verdict grant_or_revoke_rule(const input& in, std::string_view action) {
  const auto roles = roles_arg(in, "roles");
  if (!roles) return allowed;
  return on_role_dbs(in, *roles, action) ? allowed : refused();
}

// usersInfo: 1 (the database's users), {forAllDBs: true}, or names; one may always see oneself.
verdict users_info_rule(const input& in) {
  const auto& arg = in.req.body.fields().front().val;
  if (arg.is_number()) return require(in, rp::database(in.req.db), actions_of({"viewUser"}));
  if (arg.is_document() && true_value(arg.as_document().get("forAllDBs")))
    return require(in, rp::cluster(), actions_of({"viewUser"}));
  const bson::array names = arg.is_array() ? arg.as_array() : bson::array{arg};
  for (const auto& v : names) {
    const auto name = parse_qualified_name(v, "user", in.req.db);
    if (!name) return allowed;
    if (in.user && *in.user == user_name{name->first, name->second}) continue;
    if (!in.privileges.allows(rp::database(name->second), "viewUser")) return refused();
  }
  return allowed;
}

// rolesInfo: 1 (the database's roles) or names; one may always see the roles one has.
verdict roles_info_rule(const input& in) {
  const auto& arg = in.req.body.fields().front().val;
  if (arg.is_number()) return require(in, rp::database(in.req.db), actions_of({"viewRole"}));
  const bson::array names = arg.is_array() ? arg.as_array() : bson::array{arg};
  for (const auto& v : names) {
    const auto name = parse_qualified_name(v, "role", in.req.db);
    if (!name) return allowed;
    if (in.roles.contains(role_name{name->first, name->second})) continue;
    if (!in.privileges.allows(rp::database(name->second), "viewRole")) return refused();
  }
  return allowed;
}

void add_user_management_rules(std::map<std::string, authorization_rule, std::less<>>& r) {
  r["createUser"] = {true, create_user_rule};
  r["updateUser"] = {true, update_user_rule};
  r["dropUser"] = on_database("dropUser");
  r["usersInfo"] = {true, users_info_rule};
  r["createRole"] = {true, [](const input& in) { return create_or_update_role_rule(in, false); }};
  r["updateRole"] = {true, [](const input& in) { return create_or_update_role_rule(in, true); }};
  r["dropRole"] = on_database("dropRole");
  r["rolesInfo"] = {true, roles_info_rule};
  r["grantRolesToUser"] = {true,
                           [](const input& in) { return grant_or_revoke_rule(in, "grantRole"); }};
  r["revokeRolesFromUser"] = {
      true, [](const input& in) { return grant_or_revoke_rule(in, "revokeRole"); }};
}

std::map<std::string, authorization_rule, std::less<>> make_rules() {
  std::map<std::string, authorization_rule, std::less<>> r;
  for (const char* name : {"hello", "isMaster", "ismaster", "ping", "buildInfo", "buildinfo",
                           "saslStart", "saslContinue", "connectionStatus", "logout",
                           "configureFailPoint", "getLastError", "resetError", "listCommands"})
    r[name] = no_authentication();
  for (const char* name : {"endSessions", "refreshSessions", "killSessions", "whatsmyuri",
                           "commitTransaction", "abortTransaction"})
    r[name] = authenticated();
  for (const char* name : {"find", "count", "distinct"})
    r[name] = on_collection({"find"});
  r["getMore"] = {true, get_more_rule};
  r["killCursors"] = {true, kill_cursors_rule};
  r["aggregate"] = {true, aggregate_rule};
  r["insert"] = {true, [](const input& in) { return write_rule(in, actions_of({"insert"})); }};
  r["update"] = {true, update_rule};
  r["delete"] = {true, [](const input& in) { return write_rule(in, actions_of({"remove"})); }};
  r["findAndModify"] = r["findandmodify"] = {true, find_and_modify_rule};
  r["create"] = {true, create_rule};
  r["drop"] = on_collection({"dropCollection"});
  r["dropDatabase"] = on_database("dropDatabase");
  r["renameCollection"] = {true, rename_rule};
  r["collMod"] = on_collection({"collMod"});
  r["createIndexes"] = on_collection({"createIndex"});
  r["listIndexes"] = on_collection({"listIndexes"});
  r["dropIndexes"] = r["deleteIndexes"] = on_collection({"dropIndex"});
  r["listCollections"] = {true, list_collections_rule};
  r["listDatabases"] = {true, list_databases_rule};
  r["collStats"] = on_collection({"collStats"});
  r["dbStats"] = on_database("dbStats");
  r["serverStatus"] = on_cluster("serverStatus");
  r["replSetStepDown"] = on_cluster("replSetStateChange");
  r["killAllSessions"] = on_cluster("killAnySession");
  r["killOp"] = on_cluster("killop");
  r["currentOp"] = {true, [](const input& in) {
                      if (true_value(in.req.body.get("$ownOps"))) return allowed;
                      return require(in, rp::cluster(), actions_of({"inprog"}));
                    }};
  for (const char* name :
       {"replSetGetStatus", "replSetGetConfig", "replSetResizeOplog", "getParameter",
        "setParameter", "top", "hostInfo", "getCmdLineOpts", "getLog"})
    r[name] = on_cluster(name);
  add_user_management_rules(r);
  return r;
}

}  // namespace

const authorization_rule* find_authorization_rule(std::string_view command) {
  static const auto rules = make_rules();
  const auto it = rules.find(command);
  return it == rules.end() ? nullptr : &it->second;
}

std::string_view canonical_command_name(std::string_view command) {
  if (command == "findandmodify") return "findAndModify";
  if (command == "deleteIndexes") return "dropIndexes";
  if (command == "buildinfo") return "buildInfo";
  if (command == "isMaster" || command == "ismaster") return "hello";
  return command;
}

}  // namespace mongo_emulator
