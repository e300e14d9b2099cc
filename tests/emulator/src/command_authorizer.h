#pragma once
// Authorization of every command as MongoDB's checkAuthorization does it, when the server runs
// with --auth: commands that need no authentication (hello, ping, buildInfo, saslStart, ...),
// then "command X requires authentication" (13) for an unauthenticated connection, then the
// privileges each command's checkAuthForOperation asks for (find, insert, update, remove,
// changeStream, ... on the namespace, database or cluster), refused with "not authorized on db
// to execute command { ... }" (13). The localhost exception: with no user and no role yet, an
// unauthenticated connection from a loopback address holds only createUser and grantRole on
// admin (and the cluster actions MongoDB adds). It also keeps the state that depends on who
// asked: the user who opened each cursor (getMore and killCursors of another user's cursor are
// refused) and each session (killSessions ends only the caller's own sessions), and it adjusts
// replies: hello's saslSupportedMechs and speculativeAuthenticate, and the authorized-only
// listings of listDatabases and listCollections.
// Lifecycle: one per server (server_state). Thread-safe (a mutex over the owner maps; the
// sessions belong to their connections).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "auth_session.h"
#include "bson/value.h"
#include "common/expected.h"
#include "privilege_set.h"
#include "user_registry.h"
#include "wire_codec.h"

namespace mongo_emulator {

struct connection_info;

// MongoDB's BSONObj::toString(), which its Unauthorized messages print commands with:
// { find: "c", filter: {}, lsid: { id: UUID("...") }, $db: "shop" }.
std::string shell_text(const bson::document& doc);

class command_authorizer {
 public:
  command_authorizer(user_registry& users, bool enforce, bool localhost_bypass);

  bool enforcing() const { return enforce_; }
  user_registry& users() { return users_; }
  // The connection's authentication state (made on first use).
  static auth_session& session(connection_info& conn);

  // Before a command runs (after its admin-only check): nullopt when it may run, else the
  // error to answer with (13 Unauthorized; 238 for a command without a rule here).
  std::optional<denormd::error> check(const request& req, connection_info& conn);
  // After a command succeeded: hello's authentication fields (also without --auth), the owners
  // of new cursors, and the authorized-only listings.
  void after(const request& req, connection_info& conn, bson::document& reply);

  // killSessions with --auth: the sessions among `lsids` that `user` used, or all of its
  // sessions when `lsids` is empty (MongoDB scopes a session id to its user).
  std::vector<bson::document> own_sessions(const std::optional<user_name>& user,
                                           const std::vector<bson::document>& lsids) const;

 private:
  struct session_use {
    std::string owner;  // "user@db", or "" for an unauthenticated one
    bson::document lsid;
    std::chrono::steady_clock::time_point last_used;
  };

  void answer_hello(const request& req, connection_info& conn, bson::document& reply);
  void record_session(const bson::document& body, const std::string& owner);
  void record_cursors(const request& req, const std::string& owner, const bson::document& reply);
  void filter_listing(const request& req, const privilege_set& privileges,
                      bson::document& reply) const;
  std::optional<std::string> cursor_owner(std::int64_t id) const;

  user_registry& users_;
  const bool enforce_;
  const bool localhost_bypass_;
  mutable std::mutex mutex_;
  std::map<std::int64_t, std::string> cursor_owners_;
  std::map<std::string, session_use> sessions_;  // by the lsid's id bytes
};

}  // namespace mongo_emulator
