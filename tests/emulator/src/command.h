#pragma once
// What a command handler sees and returns. Handlers are plain functions that run synchronously
// under whatever storage lock they take; the only waiting (await-data getMore) is expressed as
// a result asking the dispatcher to run the handler again after changes or a deadline.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "bson/value.h"
#include "change_notifier.h"
#include "common/expected.h"
#include "server_state.h"
#include "wire_codec.h"

namespace mongo_emulator {

using denormd::expected;
using denormd::fail;

class auth_session;

struct connection_info {
  std::int32_t id = 0;
  std::string app_name;     // client.application.name from the handshake
  bool said_hello = false;  // used `hello` (not isMaster): MongoDB's errors say "primary" then
  bool loopback = false;    // from a loopback address (the localhost exception of --auth)
  std::shared_ptr<auth_session> auth;  // who it is authenticated as (command_authorizer)
};

// What a write command had done when it stopped to wait for a transaction to end (MongoDB's
// non-transactional writes wait for the documents a transaction wrote): it runs again from
// statement `next`, the earlier statements' results kept.
struct write_progress {
  std::size_t next = 0;
  std::size_t n = 0;
  std::size_t modified = 0;
  bson::array upserted;
  bson::array write_errors;
};

struct command_context {
  server_state& server;
  connection_info& conn;
  const request& req;
  const bson::document& body;
  const std::string& db;
  std::chrono::steady_clock::time_point started;
  // The transaction a statement with `autocommit: false` runs in.
  transaction* txn = nullptr;
  write_progress progress;
};

// Run the handler again once changes past `seen` are recorded or at `deadline`.
struct await_changes {
  std::chrono::steady_clock::time_point deadline;
  std::uint64_t seen = 0;
  watch_scope scope;  // changes elsewhere do not wake the waiter
};

struct command_result {
  bson::document reply;  // without ok/operationTime/$clusterTime unless the handler sets ok
  std::optional<await_changes> await;
};

using command_outcome = expected<command_result>;
using command_handler = std::function<command_outcome(command_context&)>;

// Where a command runs when the node is not primary (MongoDB's Command::AllowedOnSecondary):
// always; when the request's $readPreference is other than primary (opt_in, else 13435); never
// (10107). Transaction statements never run on a secondary.
enum class on_secondary { always, opt_in, never };

struct command_spec {
  command_handler handler;
  bool retryable_write = false;  // insert/update/delete/findAndModify
  bool admin_only = false;
  on_secondary secondary = on_secondary::always;
};

}  // namespace mongo_emulator
