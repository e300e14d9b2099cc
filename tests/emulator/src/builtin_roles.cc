#include "builtin_roles.h"

#include <algorithm>
#include <array>
#include <utility>

namespace mongo_emulator {

namespace {

using rp = resource_pattern;

// builtin_roles.cpp's action sets, by the role that introduces them.
const action_set read_actions =
    actions_of({"changeStream", "collStats", "dbHash", "dbStats", "find", "killCursors",
                "listCollections", "listIndexes", "planCacheRead"});
const action_set read_write_actions =
    read_actions |
    actions_of({"convertToCapped", "createCollection", "dropCollection", "dropIndex", "emptycapped",
                "createIndex", "insert", "remove", "renameCollectionSameDB", "update"});
const action_set user_admin_actions = actions_of(
    {"changeCustomData", "changePassword", "createUser", "createRole", "dropUser", "dropRole",
     "grantRole", "revokeRole", "setAuthenticationRestriction", "viewUser", "viewRole"});
const action_set db_admin_actions = actions_of({"bypassDocumentValidation",
                                                "collMod",
                                                "collStats",
                                                "compact",
                                                "convertToCapped",
                                                "createCollection",
                                                "dbStats",
                                                "dropCollection",
                                                "dropDatabase",
                                                "dropIndex",
                                                "createIndex",
                                                "enableProfiler",
                                                "listCollections",
                                                "listIndexes",
                                                "planCacheIndexFilter",
                                                "planCacheRead",
                                                "planCacheWrite",
                                                "reIndex",
                                                "renameCollectionSameDB",
                                                "storageDetails",
                                                "validate"});
const action_set profile_actions =
    read_actions | actions_of({"convertToCapped", "createCollection", "dropCollection"});
const action_set cluster_monitor_cluster_actions = actions_of({"checkFreeMonitoringStatus",
                                                               "connPoolStats",
                                                               "getCmdLineOpts",
                                                               "getDefaultRWConcern",
                                                               "getLog",
                                                               "getParameter",
                                                               "getShardMap",
                                                               "hostInfo",
                                                               "listDatabases",
                                                               "listSessions",
                                                               "listShards",
                                                               "netstat",
                                                               "operationMetrics",
                                                               "replSetGetConfig",
                                                               "replSetGetStatus",
                                                               "serverStatus",
                                                               "top",
                                                               "useUUID",
                                                               "inprog",
                                                               "shardingState"});
const action_set cluster_monitor_db_actions =
    actions_of({"collStats", "dbStats", "getDatabaseVersion", "getShardVersion", "indexStats"});
const action_set host_manager_cluster_actions =
    actions_of({"applicationMessage", "connPoolSync", "dropConnections", "logRotate",
                "setParameter", "shutdown", "touch", "unlock", "flushRouterConfig", "fsync",
                "invalidateUserCache", "killAnyCursor", "killAnySession", "killop",
                "replSetResizeOplog", "resync", "trafficRecord", "rotateCertificates"});
const action_set cluster_manager_cluster_actions = actions_of(
    {"appendOplogNote", "applicationMessage", "replSetConfigure", "replSetGetConfig",
     "replSetGetStatus", "replSetStateChange", "resync", "addShard", "removeShard", "listSessions",
     "listShards", "flushRouterConfig", "cleanupOrphaned", "getDefaultRWConcern",
     "setDefaultRWConcern", "setFeatureCompatibilityVersion", "setFreeMonitoring"});
const action_set cluster_manager_db_actions =
    actions_of({"clearJumboFlag", "splitChunk", "moveChunk", "enableSharding", "splitVector",
                "refineCollectionShardKey", "reshardCollection"});
const action_set write_actions = actions_of({"insert", "update", "remove"});
const action_set restore_actions =
    actions_of({"bypassDocumentValidation", "collMod", "convertToCapped", "createCollection",
                "createIndex", "dropCollection", "insert"});

void add(privilege_set& s, rp resource, const action_set& actions) {
  s.add(privilege{std::move(resource), actions});
}

void read_db(privilege_set& s, const std::string& db) {
  add(s, rp::database(db), read_actions);
  add(s, rp::exact(db, "system.js"), read_actions);
}

void read_write_db(privilege_set& s, const std::string& db) {
  read_db(s, db);
  add(s, rp::database(db), read_write_actions);
  add(s, rp::exact(db, "system.js"), read_write_actions);
}

void user_admin_db(privilege_set& s, const std::string& db) {
  add(s, rp::database(db), user_admin_actions);
}

void db_admin_db(privilege_set& s, const std::string& db) {
  add(s, rp::database(db), db_admin_actions);
  add(s, rp::exact(db, "system.profile"), profile_actions);
}

void db_owner(privilege_set& s, const std::string& db) {
  read_write_db(s, db);
  db_admin_db(s, db);
  user_admin_db(s, db);
}

void enable_sharding(privilege_set& s, const std::string&) {
  add(s, rp::any_normal(),
      actions_of({"enableSharding", "refineCollectionShardKey", "reshardCollection"}));
}

void read_any(privilege_set& s, const std::string&) {
  add(s, rp::any_normal(), read_actions);
  add(s, rp::cluster(), actions_of({"listDatabases"}));
  add(s, rp::collection_name("system.js"), read_actions);
}

void read_write_any(privilege_set& s, const std::string& db) {
  read_any(s, db);
  add(s, rp::any_normal(), read_write_actions);
  add(s, rp::collection_name("system.js"), read_write_actions);
}

void user_admin_any(privilege_set& s, const std::string&) {
  const action_set index_actions = read_actions | actions_of({"createIndex", "dropIndex"});
  add(s, rp::any_normal(), user_admin_actions);
  add(s, rp::database("local"), user_admin_actions);
  add(s, rp::database("config"), user_admin_actions);
  add(s, rp::cluster(),
      actions_of({"listDatabases", "authSchemaUpgrade", "invalidateUserCache", "viewUser"}));
  add(s, rp::any_normal(), actions_of({"listCachedAndActiveUsers"}));
  add(s, rp::collection_name("system.users"), read_actions);
  add(s, rp::exact("admin", "system.users"), index_actions);
  add(s, rp::exact("admin", "system.roles"), index_actions);
  add(s, rp::exact("admin", "system.version"), read_actions);
  add(s, rp::exact("admin", "system.backup_users"), read_actions);
}

void db_admin_any(privilege_set& s, const std::string&) {
  add(s, rp::cluster(), actions_of({"listDatabases"}));
  add(s, rp::any_normal(), db_admin_actions);
  add(s, rp::collection_name("system.profile"), profile_actions);
}

void cluster_monitor(privilege_set& s, const std::string&) {
  add(s, rp::cluster(), cluster_monitor_cluster_actions);
  add(s, rp::any_normal(), cluster_monitor_db_actions);
  add(s, rp::database("config"), cluster_monitor_db_actions);
  add(s, rp::database("local"), cluster_monitor_db_actions);
  read_db(s, "config");
  read_db(s, "local");
  for (const char* coll : {"system.replset", "replset.election", "replset.minvalid"})
    add(s, rp::exact("local", coll), actions_of({"find"}));
  add(s, rp::collection_name("system.profile"), actions_of({"find"}));
}

void host_manager(privilege_set& s, const std::string&) {
  add(s, rp::cluster(), host_manager_cluster_actions);
  add(s, rp::any_normal(), actions_of({"killCursors"}));
}

void cluster_manager(privilege_set& s, const std::string&) {
  add(s, rp::cluster(), cluster_manager_cluster_actions);
  add(s, rp::any_normal(), cluster_manager_db_actions);
  add(s, rp::database("config"), cluster_manager_db_actions);
  add(s, rp::database("local"), cluster_manager_db_actions);
  add(s, rp::exact("local", "system.replset"), read_actions);
  read_db(s, "config");
  add(s, rp::database("config"), write_actions);
  add(s, rp::database("local"), write_actions);
  add(s, rp::exact("local", "replset.election"), write_actions);
  add(s, rp::exact("local", "replset.minvalid"), write_actions);
}

void cluster_admin(privilege_set& s, const std::string& db) {
  cluster_monitor(s, db);
  host_manager(s, db);
  cluster_manager(s, db);
  add(s, rp::any_normal(), actions_of({"dropDatabase"}));
  add(s, rp::any_resource(), actions_of({"importCollection", "exportCollection"}));
}

void queryable_backup(privilege_set& s, const std::string&) {
  const action_set find = actions_of({"find"});
  add(s, rp::any_resource(), actions_of({"collStats", "listCollections", "listIndexes"}));
  add(s, rp::any_normal(), find);
  add(s, rp::cluster(), actions_of({"getParameter", "listDatabases", "useUUID"}));
  add(s, rp::database("config"), find);
  add(s, rp::database("local"), find);
  add(s, rp::exact("local", "replset.election"), find);
  add(s, rp::exact("local", "replset.minvalid"), find);
  for (const char* coll : {"system.js", "system.users", "system.profile"})
    add(s, rp::collection_name(coll), find);
  for (const char* coll : {"system.backup_users", "system.roles", "system.version"})
    add(s, rp::exact("admin", coll), find);
  add(s, rp::exact("config", "settings"), find);
}

void backup(privilege_set& s, const std::string& db) {
  add(s, rp::cluster(), actions_of({"appendOplogNote", "serverStatus"}));
  add(s, rp::exact("config", "settings"), actions_of({"insert", "update"}));
  queryable_backup(s, db);
}

void restore(privilege_set& s, const std::string&) {
  const action_set& a = restore_actions;
  add(s, rp::any_normal(), a);
  add(s, rp::collection_name("system.js"), a);
  add(s, rp::any_resource(), actions_of({"listCollections"}));
  add(s, rp::database("config"), a);
  for (const char* coll : {"system.replset", "replset.election", "replset.minvalid"})
    add(s, rp::exact("local", coll), a);
  add(s, rp::database("local"), a);
  add(s, rp::any_normal(), user_admin_actions);
  add(s, rp::exact("admin", "tempusers"), actions_of({"find"}));
  add(s, rp::exact("admin", "temproles"), actions_of({"find"}));
  add(s, rp::exact("admin", "system.backup_users"), a);
  add(s, rp::exact("admin", "system.version"), a | actions_of({"find"}));
  add(s, rp::collection_name("system.users"), a | actions_of({"find", "update", "remove"}));
  add(s, rp::cluster(), actions_of({"getParameter", "forceUUID", "useUUID"}));
  add(s, rp::exact("admin", "system.roles"), actions_of({"createIndex"}));
}

void root(privilege_set& s, const std::string& db) {
  cluster_admin(s, db);
  user_admin_any(s, db);
  db_admin_any(s, db);
  read_write_any(s, db);
  backup(s, db);
  restore(s, db);
  add(s, rp::any_resource(), actions_of({"validate"}));
}

void internal_system(privilege_set& s, const std::string&) {
  add(s, rp::any_resource(), action_set{}.set());
}

struct definition {
  std::string_view name;
  bool admin_only;
  void (*add_privileges)(privilege_set&, const std::string&);
};

// Sorted by name, as builtin_roles.cpp's std::map keeps them.
constexpr std::array<definition, 19> definitions{{
    {"__queryableBackup", true, queryable_backup},
    {"__system", true, internal_system},
    {"backup", true, backup},
    {"clusterAdmin", true, cluster_admin},
    {"clusterManager", true, cluster_manager},
    {"clusterMonitor", true, cluster_monitor},
    {"dbAdmin", false, db_admin_db},
    {"dbAdminAnyDatabase", true, db_admin_any},
    {"dbOwner", false, db_owner},
    {"enableSharding", false, enable_sharding},
    {"hostManager", true, host_manager},
    {"read", false, read_db},
    {"readAnyDatabase", true, read_any},
    {"readWrite", false, read_write_db},
    {"readWriteAnyDatabase", true, read_write_any},
    {"restore", true, restore},
    {"root", true, root},
    {"userAdmin", false, user_admin_db},
    {"userAdminAnyDatabase", true, user_admin_any},
}};

const definition* find(std::string_view role, std::string_view db) {
  if (db.empty() || db == "$external") return nullptr;
  for (const auto& d : definitions) {
    if (d.name == role) return d.admin_only && db != "admin" ? nullptr : &d;
  }
  return nullptr;
}

}  // namespace

bool is_builtin_role(std::string_view role, std::string_view db) {
  return find(role, db) != nullptr;
}

std::optional<privilege_set> builtin_role_privileges(std::string_view role, std::string_view db) {
  const definition* d = find(role, db);
  if (d == nullptr) return std::nullopt;
  privilege_set s;
  d->add_privileges(s, std::string(db));
  return s;
}

std::vector<std::string> builtin_role_names(std::string_view db) {
  std::vector<std::string> out;
  for (const auto& d : definitions) {
    if (find(d.name, db) != nullptr) out.emplace_back(d.name);
  }
  return out;
}

}  // namespace mongo_emulator
