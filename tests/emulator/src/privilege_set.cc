#include "privilege_set.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <iostream>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

// action_type.idl's values, sorted (C locale) so that a name's index is found by binary search
// and rolesInfo lists actions in a stable order.
constexpr std::array<std::string_view, action_count> action_names = {
    "addShard",
    "advanceClusterTime",
    "allCollectionStats",
    "analyze",
    "analyzeShardKey",
    "anyAction",
    "appendOplogNote",
    "applicationMessage",
    "applyOps",
    "auditConfigure",
    "auditLogRotate",
    "authCheck",
    "authSchemaUpgrade",
    "authenticate",
    "bypassDocumentValidation",
    "bypassWriteBlockingMode",
    "changeCustomData",
    "changeOwnCustomData",
    "changeOwnPassword",
    "changePassword",
    "changeStream",
    "checkFreeMonitoringStatus",
    "checkMetadataConsistency",
    "cleanupOrphaned",
    "cleanupStructuredEncryptionData",
    "clearJumboFlag",
    "closeAllDatabases",
    "collMod",
    "collStats",
    "compact",
    "compactStructuredEncryptionData",
    "configureQueryAnalyzer",
    "connPoolStats",
    "connPoolSync",
    "convertToCapped",
    "cpuProfiler",
    "createCollection",
    "createDatabase",
    "createIndex",
    "createRole",
    "createSearchIndexes",
    "createUser",
    "dbCheck",
    "dbHash",
    "dbStats",
    "dropAllRolesFromDatabase",
    "dropAllUsersFromDatabase",
    "dropCollection",
    "dropConnections",
    "dropDatabase",
    "dropIndex",
    "dropRole",
    "dropSearchIndex",
    "dropUser",
    "emptycapped",
    "enableProfiler",
    "enableSharding",
    "exportCollection",
    "find",
    "flushRouterConfig",
    "forceUUID",
    "fsync",
    "fsyncUnlock",
    "getChangeStreamState",
    "getClusterParameter",
    "getCmdLineOpts",
    "getDatabaseVersion",
    "getDefaultRWConcern",
    "getLog",
    "getParameter",
    "getShardMap",
    "getShardVersion",
    "grantPrivilegesToRole",
    "grantRole",
    "grantRolesToRole",
    "grantRolesToUser",
    "hostInfo",
    "impersonate",
    "importCollection",
    "indexStats",
    "inprog",
    "insert",
    "internal",
    "invalidateUserCache",
    "issueDirectShardOperations",
    "killAnyCursor",
    "killAnySession",
    "killCursors",
    "killop",
    "listCachedAndActiveUsers",
    "listCollections",
    "listCursors",
    "listDatabases",
    "listIndexes",
    "listSampledQueries",
    "listSearchIndexes",
    "listSessions",
    "listShards",
    "logRotate",
    "moveChunk",
    "moveCollection",
    "netstat",
    "oidReset",
    "oidcListKeys",
    "oidcRefreshKeys",
    "operationMetrics",
    "planCacheIndexFilter",
    "planCacheRead",
    "planCacheWrite",
    "querySettings",
    "queryStatsRead",
    "queryStatsReadTransformed",
    "reIndex",
    "refineCollectionShardKey",
    "remove",
    "removeShard",
    "renameCollection",
    "renameCollectionSameDB",
    "repairDatabase",
    "replSetConfigure",
    "replSetGetConfig",
    "replSetGetStatus",
    "replSetHeartbeat",
    "replSetReconfig",
    "replSetResizeOplog",
    "replSetStateChange",
    "reshardCollection",
    "resync",
    "revokePrivilegesFromRole",
    "revokeRole",
    "revokeRolesFromRole",
    "revokeRolesFromUser",
    "rotateCertificates",
    "runAsLessPrivilegedUser",
    "runTenantMigration",
    "serverStatus",
    "setAuthenticationRestriction",
    "setChangeStreamState",
    "setClusterParameter",
    "setDefaultRWConcern",
    "setFeatureCompatibilityVersion",
    "setFreeMonitoring",
    "setParameter",
    "setUserWriteBlockMode",
    "shardCollection",
    "shardedDataDistribution",
    "shardingState",
    "shutdown",
    "splitChunk",
    "splitVector",
    "storageDetails",
    "top",
    "touch",
    "trafficRecord",
    "transitionFromDedicatedConfigServer",
    "transitionToDedicatedConfigServer",
    "unlock",
    "update",
    "updateRole",
    "updateSearchIndex",
    "updateUser",
    "useTenant",
    "useUUID",
    "validate",
    "viewRole",
    "viewUser"};

constexpr std::size_t any_action = 5;
static_assert(action_names[any_action] == "anyAction");

denormd::unexpected<denormd::error> bad_value(std::string message) {
  return denormd::fail(std::move(message), codes::bad_value);
}

bool is_true(const bson::value& v) {
  return v.is<bool>() ? v.as<bool>() : v.is_number() && v.to_double() != 0;
}

}  // namespace

std::optional<std::size_t> action_index(std::string_view name) {
  const auto it = std::lower_bound(action_names.begin(), action_names.end(), name);
  if (it == action_names.end() || *it != name) return std::nullopt;
  return static_cast<std::size_t>(it - action_names.begin());
}

std::string_view action_name(std::size_t index) {
  return action_names.at(index);
}

action_set actions_of(std::initializer_list<std::string_view> names) {
  action_set out;
  for (const auto name : names) {
    const auto i = action_index(name);
    if (!i) {
      std::cerr << "mongo-emulator: unknown action type '" << name << "'" << std::endl;
      std::abort();
    }
    out.set(*i);
  }
  return out;
}

bool grants(const action_set& have, const action_set& wanted) {
  return have.test(any_action) || (wanted & ~have).none();
}

bool is_normal_collection(std::string_view db, std::string_view coll) {
  if (coll.starts_with("system.")) return false;
  return !(db == "local" && coll.starts_with("replset."));
}

bson::document resource_pattern::to_document() const {
  switch (k) {
    case kind::any_resource:
      return bson::document{{"anyResource", true}};
    case kind::cluster:
      return bson::document{{"cluster", true}};
    default:
      return bson::document{{"db", db}, {"collection", coll}};
  }
}

denormd::expected<resource_pattern> resource_pattern::parse(const bson::value& v) {
  if (!v.is_document()) return bad_value("resource must be an object");
  const auto& d = v.as_document();
  const auto* cluster = d.get("cluster");
  const auto* any = d.get("anyResource");
  const auto* db = d.get("db");
  const auto* coll = d.get("collection");
  const int kinds = (cluster != nullptr) + (any != nullptr) + (db != nullptr || coll != nullptr);
  if (kinds != 1)
    return bad_value(
        "resource pattern must contain exactly one of 'db'/'collection', 'cluster' or "
        "'anyResource'");
  if (cluster != nullptr) {
    if (!is_true(*cluster)) return bad_value("resource pattern 'cluster' must be true");
    return resource_pattern::cluster();
  }
  if (any != nullptr) {
    if (!is_true(*any)) return bad_value("resource pattern 'anyResource' must be true");
    return resource_pattern::any_resource();
  }
  if (db == nullptr || coll == nullptr || !db->is_string() || !coll->is_string())
    return bad_value("resource pattern must contain 'db' and 'collection' strings");
  const std::string& d_name = db->as_string();
  const std::string& c_name = coll->as_string();
  if (d_name.empty() && c_name.empty()) return resource_pattern::any_normal();
  if (c_name.empty()) return resource_pattern::database(d_name);
  if (d_name.empty()) return resource_pattern::collection_name(c_name);
  return resource_pattern::exact(d_name, c_name);
}

bson::document privilege::to_document() const {
  bson::array names;
  for (std::size_t i = 0; i < action_count; ++i) {
    if (actions.test(i)) names.emplace_back(std::string(action_names[i]));
  }
  return bson::document{{"resource", resource.to_document()}, {"actions", std::move(names)}};
}

denormd::expected<privilege> privilege::parse(const bson::value& v) {
  if (!v.is_document()) return bad_value("privilege must be an object");
  const auto* resource = v.as_document().get("resource");
  const auto* actions = v.as_document().get("actions");
  if (resource == nullptr) return bad_value("privilege must contain a 'resource' field");
  if (actions == nullptr || !actions->is_array())
    return bad_value("privilege must contain an 'actions' array");
  auto pattern = resource_pattern::parse(*resource);
  if (!pattern) return pattern.error();
  privilege p{std::move(pattern).value(), {}};
  for (const auto& a : actions->as_array()) {
    if (!a.is_string()) return bad_value("privilege actions must be strings");
    const auto i = action_index(a.as_string());
    if (!i) return bad_value("Unrecognized action privilege string: " + a.as_string());
    p.actions.set(*i);
  }
  return p;
}

void privilege_set::add(const privilege& p) {
  by_resource_[p.resource] |= p.actions;
}

void privilege_set::add(const privilege_set& other) {
  for (const auto& [resource, actions] : other.by_resource_)
    by_resource_[resource] |= actions;
}

action_set privilege_set::granted_on(const resource_pattern& pattern) const {
  const auto it = by_resource_.find(pattern);
  return it == by_resource_.end() ? action_set{} : it->second;
}

std::vector<resource_pattern> privilege_set::search_list(const resource_pattern& target) const {
  std::vector<resource_pattern> list{resource_pattern::any_resource()};
  const bool special_db = target.db == "local" || target.db == "config";
  switch (target.k) {
    case resource_pattern::kind::exact:
      if (is_normal_collection(target.db, target.coll)) {
        if (!special_db) list.push_back(resource_pattern::any_normal());
        list.push_back(resource_pattern::database(target.db));
      }
      list.push_back(resource_pattern::collection_name(target.coll));
      break;
    case resource_pattern::kind::database:
      if (!special_db) list.push_back(resource_pattern::any_normal());
      break;
    default:
      break;
  }
  if (target.k != resource_pattern::kind::any_resource) list.push_back(target);
  return list;
}

bool privilege_set::allows(const resource_pattern& target, const action_set& wanted) const {
  action_set have;
  for (const auto& pattern : search_list(target))
    have |= granted_on(pattern);
  return grants(have, wanted);
}

bool privilege_set::allows(const resource_pattern& target, std::string_view action) const {
  return allows(target, actions_of({action}));
}

bool privilege_set::any_action_on(const resource_pattern& target) const {
  for (const auto& pattern : search_list(target)) {
    if (granted_on(pattern).any()) return true;
  }
  return false;
}

bool privilege_set::any_action_in_db(std::string_view db) const {
  for (const auto& [resource, actions] : by_resource_) {
    if (actions.none()) continue;
    switch (resource.k) {
      case resource_pattern::kind::any_resource:
      case resource_pattern::kind::any_normal:
      case resource_pattern::kind::collection_name:
        return true;
      case resource_pattern::kind::database:
      case resource_pattern::kind::exact:
        if (resource.db == db) return true;
        break;
      case resource_pattern::kind::cluster:
        break;
    }
  }
  return false;
}

std::vector<privilege> privilege_set::to_vector() const {
  std::vector<privilege> out;
  for (const auto& [resource, actions] : by_resource_)
    out.push_back({resource, actions});
  return out;
}

bson::array privilege_set::to_array() const {
  bson::array out;
  for (const auto& p : to_vector())
    out.emplace_back(p.to_document());
  return out;
}

}  // namespace mongo_emulator
