#pragma once
// One connection's authentication: the user it is authenticated as (MongoDB 6.0 allows one per
// connection), its SASL conversation in progress (saslStart, saslContinue, or hello's
// speculativeAuthenticate), and its privileges, resolved from the registry and refreshed
// whenever the registry changes (a dropped user is logged out, as MongoDB's
// AuthorizationSession does at the start of each request).
// Lifecycle: created on a connection's first command, dies with it. Not thread-safe (its
// connection's strand serializes it).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bson/value.h"
#include "common/expected.h"
#include "privilege_set.h"
#include "scram.h"
#include "user_registry.h"

namespace mongo_emulator {

class auth_session {
 public:
  const std::optional<user_name>& user() const { return user_; }
  void log_out();

  // The authenticated user's direct roles, every role they amount to, and their privileges;
  // empty when not authenticated. Refreshes from `registry` when it changed.
  const std::vector<role_name>& direct_roles(const user_registry& registry);
  const resolved_roles& resolved(const user_registry& registry);

  // saslStart (also hello's speculativeAuthenticate): {mechanism, payload, options}. The reply
  // is {conversationId: 1, done, payload}; the payload has the request's type (BinData, or a
  // base64 string). Failures are 18 "Authentication failed." (2 for an unknown mechanism).
  denormd::expected<bson::document> sasl_start(const bson::document& command, const std::string& db,
                                               const user_registry& registry);
  // saslContinue: {conversationId, payload}.
  denormd::expected<bson::document> sasl_continue(const bson::document& command,
                                                  const std::string& db,
                                                  const user_registry& registry);

 private:
  denormd::expected<bson::document> sasl_step(const bson::value& payload, const std::string& db,
                                              const user_registry& registry);
  void refresh(const user_registry& registry);

  std::optional<user_name> user_;
  std::unique_ptr<scram_conversation> conversation_;
  std::string conversation_db_;
  std::uint64_t generation_ = 0;
  bool fresh_ = false;  // the cache below matches generation_
  std::vector<role_name> direct_roles_;
  resolved_roles resolved_;
};

}  // namespace mongo_emulator
