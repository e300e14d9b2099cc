#pragma once
// MongoDB's authorization vocabulary: action types (src/mongo/db/auth/action_type.idl),
// resource patterns ({db, collection} with "" wildcards, {cluster: true}, {anyResource: true})
// and privileges, and privilege_set, the union of a user's privileges with MongoDB's matching
// rule (ResourcePatternSearchList: which patterns can grant an action on a target).
// Plain values: thread-compatible.

#include <bitset>
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// Every action name MongoDB knows (action_type.idl), in sorted order; an action_set indexes it.
inline constexpr std::size_t action_count = 166;
using action_set = std::bitset<action_count>;

std::optional<std::size_t> action_index(std::string_view name);
std::string_view action_name(std::size_t index);
// The set of the named actions; every name must be one of MongoDB's (a typo aborts).
action_set actions_of(std::initializer_list<std::string_view> names);
// `have` grants all of `wanted` (anyAction grants everything, as MongoDB's ActionSet does).
bool grants(const action_set& have, const action_set& wanted);

struct resource_pattern {
  enum class kind { any_resource, cluster, any_normal, database, collection_name, exact };
  kind k = kind::any_resource;
  std::string db;
  std::string coll;

  static resource_pattern any_resource() { return {kind::any_resource, {}, {}}; }
  static resource_pattern cluster() { return {kind::cluster, {}, {}}; }
  static resource_pattern any_normal() { return {kind::any_normal, {}, {}}; }
  static resource_pattern database(std::string db) { return {kind::database, std::move(db), {}}; }
  static resource_pattern collection_name(std::string coll) {
    return {kind::collection_name, {}, std::move(coll)};
  }
  static resource_pattern exact(std::string db, std::string coll) {
    return {kind::exact, std::move(db), std::move(coll)};
  }

  // {db, collection}, {cluster: true} or {anyResource: true}, as rolesInfo shows them.
  bson::document to_document() const;
  // A privilege document's `resource` (2 BadValue for anything else).
  static denormd::expected<resource_pattern> parse(const bson::value& v);

  auto operator<=>(const resource_pattern&) const = default;
  bool operator==(const resource_pattern&) const = default;
};

// A collection MongoDB calls "normal": not system.*, and not local.replset.*.
bool is_normal_collection(std::string_view db, std::string_view coll);

struct privilege {
  resource_pattern resource;
  action_set actions;

  // {resource, actions: [sorted names]}.
  bson::document to_document() const;
  // A createRole privilege; 2 BadValue for an unknown action ("Unrecognized action privilege
  // string: x") or a malformed resource.
  static denormd::expected<privilege> parse(const bson::value& v);
};

class privilege_set {
 public:
  // Merges actions per resource, as Privilege::addPrivilegeToPrivilegeVector does.
  void add(const privilege& p);
  void add(const privilege_set& other);

  // MongoDB's isAuthorizedForPrivilege: the actions granted on the patterns of `target`'s search
  // list (anyResource; anyNormalResource and the database for a normal collection outside local
  // and config; the collection name in any database; the target itself) cover `wanted`.
  bool allows(const resource_pattern& target, const action_set& wanted) const;
  bool allows(const resource_pattern& target, std::string_view action) const;
  // Some action on a pattern of `target`'s search list (listCollections' authorizedCollections).
  bool any_action_on(const resource_pattern& target) const;
  // isAuthorizedForAnyActionOnAnyResourceInDB (listDatabases' and listCollections' filters).
  bool any_action_in_db(std::string_view db) const;

  bool empty() const { return by_resource_.empty(); }
  std::vector<privilege> to_vector() const;
  bson::array to_array() const;

 private:
  action_set granted_on(const resource_pattern& pattern) const;
  std::vector<resource_pattern> search_list(const resource_pattern& target) const;

  std::map<resource_pattern, action_set> by_resource_;
};

}  // namespace mongo_emulator
