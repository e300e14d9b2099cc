#pragma once
// Everything the connections of one server share: options, storage, cursors, the failCommand
// fail point, the retryable-write results, the command and top counters, the run-time server
// parameters, the local database's collections, and the users and roles. Lifecycle: created by main
// before listening, outlives every connection. Thread-safe (each member synchronizes itself).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "command_authorizer.h"
#include "command_counters.h"
#include "cursor_registry.h"
#include "fail_point.h"
#include "local_database.h"
#include "member_state.h"
#include "retry_cache.h"
#include "server_parameters.h"
#include "storage.h"
#include "top_counters.h"

namespace mongo_emulator {

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 27017;
  std::string rs_name = "rs0";
  std::size_t oplog_max_events = 1000000;
  std::chrono::seconds transaction_lifetime{60};  // transactionLifetimeLimitSeconds
  unsigned threads = 0;                           // 0: one per core, at least four
  // mongod's --setParameter internalChangeStreamRespectsReadPreference=true (a knob of
  // MongoDB 8.x, off in 6.0): a change stream opened with read preference primary fails its
  // next getMore on a node that is no longer primary (11602) and its cursor is killed.
  bool change_streams_respect_read_preference = false;
  // --auth: commands need an authenticated user with the privileges MongoDB asks for;
  // --setParameter enableLocalhostAuthBypass=false turns off the localhost exception.
  bool auth = false;
  bool localhost_auth_bypass = true;
};

class server_state {
 public:
  explicit server_state(server_options options)
      : options_(std::move(options)),
        store_(options_.oplog_max_events, options_.transaction_lifetime),
        parameters_(store_, options_.change_streams_respect_read_preference) {}

  const server_options& options() const { return options_; }
  storage& store() { return store_; }
  cursor_registry& cursors() { return cursors_; }
  fail_point& fail_command() { return fail_command_; }
  fail_point& fail_get_more() { return fail_get_more_; }
  retry_cache& retries() { return retries_; }
  command_counters& commands() { return commands_; }
  member_state& member() { return member_; }
  // getParameter/setParameter's knobs; the options above are their values at startup.
  server_parameters& parameters() { return parameters_; }
  top_counters& top() { return top_; }
  const local_database& local() const { return local_; }
  // Users, roles and the authorization of commands (enforced with --auth).
  command_authorizer& authorizer() { return authorizer_; }

  // "host:port" exactly as clients dial it (hello's me/primary/hosts); set once listening.
  const std::string& address() const { return address_; }
  void set_address(std::string a) { address_ = std::move(a); }

  std::int32_t next_connection_id() { return ++connection_ids_; }
  std::int32_t open_connections() const { return open_connections_.load(); }
  std::atomic<std::int32_t>& open_connections_counter() { return open_connections_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  server_options options_;
  storage store_;
  server_parameters parameters_;
  top_counters top_;
  local_database local_;
  cursor_registry cursors_;
  fail_point fail_command_{fail_point::fail_command};
  fail_point fail_get_more_{fail_point::fail_get_more};
  retry_cache retries_;
  command_counters commands_;
  member_state member_;
  user_registry users_;
  command_authorizer authorizer_{users_, options_.auth, options_.localhost_auth_bypass};
  std::string address_;
  std::atomic<std::int32_t> connection_ids_{0};
  std::atomic<std::int32_t> open_connections_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace mongo_emulator
