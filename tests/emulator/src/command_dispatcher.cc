#include "command_dispatcher.h"

#include <memory>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "collection.h"
#include "command_args.h"
#include "error_codes.h"
#include "expression.h"
#include "option_refusals.h"

namespace mongo_emulator {

namespace asio = boost::asio;

namespace {

bool is_hello(std::string_view name) {
  return name == "hello" || name == "isMaster" || name == "ismaster";
}

bool opens_change_stream(const bson::document& body) {
  const auto* pipeline = body.get("pipeline");
  if (pipeline == nullptr || !pipeline->is_array() || pipeline->as_array().empty()) return false;
  const auto& first = pipeline->as_array().front();
  return first.is_document() && first.as_document().contains("$changeStream");
}

std::optional<std::int64_t> getmore_cursor_id(const bson::document& body) {
  const auto& v = body.fields().front().val;
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  return std::nullopt;
}

// The namespace failCommand's `namespace` compares with: the collection the command names
// first (getMore: its `collection`), else the database's "$cmd".
std::string command_namespace(const request& req) {
  if (req.body.empty()) return req.db + ".$cmd";
  const auto& first = req.body.fields().front().val;
  if (first.is_string()) return req.db + "." + first.as_string();
  if (const auto* coll = req.body.get("collection"); coll != nullptr && coll->is_string())
    return req.db + "." + coll->as_string();
  return req.db + ".$cmd";
}

// MongoDB's write concern on a one-node replica set: w 0/1/"majority" are satisfied, more
// nodes cannot be.
std::optional<bson::document> write_concern_error(const bson::document& body) {
  const auto* wc = body.get("writeConcern");
  if (wc == nullptr || !wc->is_document()) return std::nullopt;
  const auto* w = wc->as_document().get("w");
  if (w == nullptr) return std::nullopt;
  bson::document e;
  if (w->is_number() && w->to_double() > 1) {
    e.append("code", std::int32_t{codes::unsatisfiable_write_concern});
    e.append("codeName", code_name(codes::unsatisfiable_write_concern));
    e.append("errmsg", "Not enough data-bearing nodes");
    return e;
  }
  if (w->is_string() && w->as_string() != "majority") {
    e.append("code", std::int32_t{79});
    e.append("codeName", code_name(79));
    e.append("errmsg", "No write concern mode named '" + w->as_string() +
                           "' found in replica set configuration");
    return e;
  }
  return std::nullopt;
}

bool ends_transaction(std::string_view command) {
  return command == "commitTransaction" || command == "abortTransaction";
}

// The commands MongoDB 6.0 runs inside a transaction (besides commit/abort). `create` and
// `createIndexes`, which it also allows, are not implemented in transactions here.
bool allowed_in_transaction(std::string_view command) {
  for (std::string_view c : {"find", "getMore", "killCursors", "insert", "update", "delete",
                             "findAndModify", "findandmodify", "aggregate", "distinct"}) {
    if (c == command) return true;
  }
  return false;
}

// A transaction statement's own checks, before the session is looked at (MongoDB's codes).
denormd::status check_transaction_statement(const request& req, bool start) {
  if (req.command == "create" || req.command == "createIndexes")
    return denormd::fail("mongo-emulator does not implement '" + req.command +
                             "' in a transaction (see tests/emulator/README.md).",
                         codes::not_implemented);
  if (!allowed_in_transaction(req.command) ||
      (req.command == "aggregate" && opens_change_stream(req.body)))
    return denormd::fail("Cannot run '" + req.command + "' in a multi-document transaction.",
                         codes::operation_not_supported_in_transaction);
  if (!req.body.get("lsid") || !req.body.get("lsid")->is_document())
    return denormd::fail("Transaction number requires a session ID to also be specified",
                         codes::invalid_options);
  if (req.body.contains("writeConcern"))
    return denormd::fail("Cannot set write concern after starting a transaction.",
                         codes::invalid_options);
  if (const auto* rc = req.body.get("readConcern")) {
    if (!start)
      return denormd::fail("Only the first command in a transaction may specify a readConcern",
                           codes::invalid_options);
    const auto* level = rc->is_document() ? rc->as_document().get("level") : nullptr;
    if (level != nullptr && level->is_string() && level->as_string() != "local" &&
        level->as_string() != "majority" && level->as_string() != "snapshot")
      return denormd::fail(
          "The readConcern level must be either 'local' (default), 'majority' or "
          "'snapshot' in order to run in a transaction",
          codes::invalid_options);
    if (rc->is_document() && rc->as_document().contains("atClusterTime"))
      return denormd::fail(
          "mongo-emulator does not implement readConcern.atClusterTime in a transaction",
          codes::not_implemented);
  }
  return {};
}

// MongoDB's commandCanRunHere and the errors execCommandDatabase gives when it is false: on a
// node that is not primary only `always` commands run, `opt_in` ones when the request's read
// preference allows a secondary (else 13435), no statement of a transaction; the local
// database is always writable.
std::optional<denormd::error> refused_on_secondary(const command_spec& spec, const request& req,
                                                   const connection_info& conn) {
  if (req.db == "local") return std::nullopt;
  const bool in_transaction = req.body.contains("autocommit");
  if (!in_transaction && (spec.secondary == on_secondary::always ||
                          (spec.secondary == on_secondary::opt_in && secondary_ok(req.body))))
    return std::nullopt;
  if (spec.secondary == on_secondary::opt_in)
    return denormd::error{
        conn.said_hello ? "not primary and secondaryOk=false" : "not master and slaveOk=false",
        codes::not_primary_no_secondary_ok};
  return denormd::error{conn.said_hello ? "not primary" : "not master",
                        codes::not_writable_primary};
}

std::int64_t txn_number(const bson::document& body) {
  const auto* v = body.get("txnNumber");
  if (v == nullptr) return -1;
  if (v->is<std::int64_t>()) return v->as<std::int64_t>();
  if (v->is<std::int32_t>()) return v->as<std::int32_t>();
  return -1;
}

// A statement that failed, or that reports write errors, aborts its transaction (MongoDB's
// transactions are all or nothing); a WriteConflict is the statement's error, not a write error.
std::optional<denormd::error> transaction_failure(const bson::document& reply) {
  const auto* errors = reply.get("writeErrors");
  if (errors == nullptr || !errors->is_array() || errors->as_array().empty()) return std::nullopt;
  const auto& first = errors->as_array().front().as_document();
  const auto* code = first.get("code");
  const auto* message = first.get("errmsg");
  return denormd::error{
      message != nullptr && message->is_string() ? message->as_string() : "",
      code != nullptr && code->is_number() ? static_cast<int>(code->to_double()) : 0};
}

}  // namespace

command_dispatcher::command_dispatcher(server_state& server) : server_(server) {
  register_admin_commands(table_);
  register_ddl_commands(table_);
  register_write_commands(table_);
  register_read_commands(table_);
  register_replset_commands(table_);
  register_diagnostic_commands(table_);
  register_user_commands(table_);
  register_auth_commands(table_);  // last: it wraps killSessions
}

asio::awaitable<std::optional<bson::document>> command_dispatcher::execute(const request& req,
                                                                           connection_info& conn) {
  const auto finish = [this](bson::document reply) {
    add_cluster_time(reply);
    return std::optional<bson::document>(std::move(reply));
  };
  if (req.legacy && !is_hello(req.command)) {
    co_return finish(
        error_reply({"Unsupported OP_QUERY command: " + req.command +
                         ". The client driver may require an upgrade. For more details see "
                         "https://dochub.mongodb.org/core/legacy-opcode-removal",
                     codes::unsupported_op_query_command},
                    nullptr));
  }
  if (!req.legacy && !req.body.contains("$db")) {
    co_return finish(error_reply(
        {"OP_MSG requests require a $db argument", codes::location_40571_missing_db}, nullptr));
  }
  auto it = table_.find(req.command);
  if (it == table_.end()) {
    co_return finish(
        error_reply({"no such command: '" + req.command + "'", codes::command_not_found}, nullptr));
  }
  // Counted like MongoDB's metrics.commands: every request of a known command, once; the
  // ones answered with ok: 0 (or a dropped connection) also count as failed.
  const auto started = std::chrono::steady_clock::now();
  std::optional<bson::document> reply = co_await run(it->second, req, conn);
  const auto* ok = reply ? reply->get("ok") : nullptr;
  const bool failed = ok == nullptr || !ok->is_number() || ok->to_double() != 1.0;
  server_.commands().count(req.command, failed);
  // The `top` command's per-collection usage; failed commands are not counted.
  if (!failed)
    server_.top().record_command(req.command, req.db, req.body,
                                 std::chrono::steady_clock::now() - started);
  co_return reply;
}

asio::awaitable<std::optional<bson::document>> command_dispatcher::run(const command_spec& spec,
                                                                       const request& req,
                                                                       connection_info& conn) {
  const auto finish = [this](bson::document reply) {
    add_cluster_time(reply);
    return std::optional<bson::document>(std::move(reply));
  };
  if (spec.admin_only && req.db != "admin") {
    co_return finish(
        error_reply({req.command + " may only be run against the admin database.", 13}, nullptr));
  }
  // --auth: authentication and privileges come next, as in MongoDB's checkAuthorization.
  if (auto refused = server_.authorizer().check(req, conn))
    co_return finish(error_reply(*refused, nullptr));

  // The role check comes before failCommand, as in MongoDB's execCommandDatabase.
  const std::uint64_t step_downs_at_start = server_.member().step_downs();
  if (!server_.member().primary()) {
    if (auto refused = refused_on_secondary(spec, req, conn)) {
      const bson::array labels =
          labels_for(req, &spec, refused->code,
                     {.change_stream = req.command == "aggregate" && opens_change_stream(req.body),
                      .transaction = req.body.contains("autocommit"),
                      .commit_or_abort = ends_transaction(req.command)});
      co_return finish(error_reply(*refused, &labels));
    }
  }

  const std::optional<fail_action> action =
      server_.fail_command().check(req.command, conn.app_name, command_namespace(req));
  if (action) {
    if (action->close_connection) co_return std::nullopt;
    if (action->block.count() > 0) {
      asio::steady_timer timer(co_await asio::this_coro::executor, action->block);
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    if (action->error_code) {
      const denormd::error e{"Failing command via 'failCommand' failpoint", *action->error_code};
      // A getMore's cursor is not checked out yet: no resumable label (change streams spec).
      const bson::array labels = action->error_labels
                                     ? *action->error_labels
                                     : labels_for(req, &spec, e.code,
                                                  {.change_stream = req.command == "aggregate" &&
                                                                    opens_change_stream(req.body)});
      co_return finish(error_reply(e, &labels));
    }
  }

  if (auto refused = refuse_unsupported_options(req.command, req.body); !refused)
    co_return finish(error_reply(refused.error(), nullptr));

  // A statement of a multi-document transaction runs in the session's transaction.
  const bool in_transaction = req.body.contains("autocommit");
  // Held until the statement ends: a step-down (abort_all_transactions) or the lifetime reaper on
  // another thread may end the transaction as soon as the lock below is released, and the
  // handler still reads its views.
  std::shared_ptr<transaction> txn;
  if (in_transaction && !ends_transaction(req.command)) {
    const auto* start = req.body.get("startTransaction");
    const bool starting = start != nullptr;
    auto entered = [&]() -> denormd::expected<std::shared_ptr<transaction>> {
      if (auto ok = check_transaction_statement(req, starting); !ok) return ok.error();
      auto lock = server_.store().lock_for_write();
      return server_.store().begin_or_continue(req.body.get("lsid")->as_document(),
                                               txn_number(req.body), starting);
    }();
    if (!entered) {
      const bson::array labels =
          labels_for(req, &spec, entered.error().code, {.transaction = true});
      co_return finish(error_reply(entered.error(), &labels));
    }
    txn = std::move(entered).value();
  }
  // Ends the transaction after a failed statement.
  const auto abort_failed = [&] {
    if (txn == nullptr) return;
    auto lock = server_.store().lock_for_write();
    (void)server_.store().abort_transaction(req.body.get("lsid")->as_document(),
                                            txn_number(req.body));
  };

  // Whether a failing getMore ran on a change stream: asked now, since an error kills the cursor.
  bool change_stream = false;
  if (req.command == "aggregate") {
    change_stream = opens_change_stream(req.body);
  } else if (req.command == "getMore") {
    const auto id = getmore_cursor_id(req.body);
    change_stream = id && server_.cursors().is_change_stream(*id);
  }

  const auto retry_key =
      spec.retryable_write ? retry_cache::key_of(req.body) : std::optional<std::string>{};
  std::optional<bson::document> stored;
  if (retry_key) stored = server_.retries().find(*retry_key);

  bson::document reply;
  if (stored) {
    reply = std::move(*stored);
  } else {
    command_context ctx{server_,   conn, req, req.body, req.db, std::chrono::steady_clock::now(),
                        txn.get(), {}};
    // An expression that fails while a handler evaluates it (a $expr in a filter, whose
    // matcher cannot return an error) fails the command, as on MongoDB.
    const auto handle = [&] {
      return engine::catch_expression_errors([&] { return spec.handler(ctx); });
    };
    command_outcome outcome = handle();
    while (outcome && outcome->await) {
      // Await-data: park a timer until changes arrive or the deadline passes; no lock is held.
      auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                        outcome->await->deadline);
      server_.store().notifier().park(timer, outcome->await->seen, outcome->await->scope);
      boost::system::error_code ignored;
      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      // A write that was waiting when the node stepped down is killed, as MongoDB's step-down
      // kills the operations that took the global lock for writing.
      if (spec.secondary == on_secondary::never &&
          server_.member().step_downs() != step_downs_at_start) {
        outcome = denormd::unexpected<denormd::error>{denormd::error{
            "operation was interrupted", codes::interrupted_due_to_repl_state_change}};
        break;
      }
      outcome = handle();
    }
    if (outcome && txn != nullptr) {
      if (auto failed = transaction_failure(outcome->reply)) {
        abort_failed();
        if (failed->code == codes::write_conflict)
          outcome = denormd::unexpected<denormd::error>{*failed};
      }
    }
    if (!outcome) {
      abort_failed();
      const bson::array labels = labels_for(req, &spec, outcome.error().code,
                                            {.change_stream = change_stream,
                                             .transaction = in_transaction,
                                             .commit_or_abort = ends_transaction(req.command)});
      co_return finish(error_reply(outcome.error(), &labels));
    }
    reply = std::move(outcome->reply);
    if (!reply.contains("ok")) reply.append("ok", 1.0);
    server_.authorizer().after(req, conn, reply);  // cursor owners, hello's auth fields, ...
    if (retry_key) server_.retries().store(*retry_key, reply);
  }

  std::optional<bson::document> wce = write_concern_error(req.body);
  if (action && action->write_concern_error) wce = action->write_concern_error;
  if (wce) {
    reply.set("writeConcernError", *wce);
    const auto* code = wce->get("code");
    bson::array labels;
    if (action && action->error_labels) {
      labels = *action->error_labels;
    } else if (code != nullptr && code->is_number()) {
      labels = labels_for(req, &spec, static_cast<int>(code->to_double()),
                          {.write_concern_error = true});
    }
    if (!labels.empty()) reply.set("errorLabels", std::move(labels));
  }
  co_return finish(std::move(reply));
}

bson::array command_dispatcher::labels_for(const request& req, const command_spec* spec, int code,
                                           label_inputs in) const {
  bson::array labels;
  if (in.transaction && !in.write_concern_error &&
      is_transient_transaction_code(code, in.commit_or_abort)) {
    labels.emplace_back("TransientTransactionError");
    return labels;
  }
  // MongoDB labels retryable writes and a transaction's commit or abort (both carry txnNumber).
  const bool retryable =
      spec != nullptr && ((spec->retryable_write && retry_cache::key_of(req.body)) ||
                          (in.commit_or_abort && req.body.contains("txnNumber")));
  if (retryable && is_retryable_write_code(code)) {
    labels.emplace_back("RetryableWriteError");
    return labels;  // a retryable write is never a change stream
  }
  if (in.change_stream && !in.write_concern_error && is_resumable_change_stream_code(code)) {
    labels.emplace_back("ResumableChangeStreamError");
  } else if (is_non_resumable_change_stream_code(code)) {
    labels.emplace_back("NonResumableChangeStreamError");
  }
  return labels;
}

bson::document command_dispatcher::error_reply(const denormd::error& e,
                                               const bson::array* labels) const {
  bson::document reply;
  reply.append("ok", 0.0);
  reply.append("errmsg", e.message);
  reply.append("code", std::int32_t{e.code});
  reply.append("codeName", code_name(e.code));
  append_duplicate_key_details(e, reply);
  if (labels != nullptr && !labels->empty()) reply.append("errorLabels", *labels);
  return reply;
}

void command_dispatcher::add_cluster_time(bson::document& reply) const {
  const bson::timestamp now = server_.store().cluster_time();
  bson::document signature;
  signature.append("hash", bson::binary{0, std::vector<std::uint8_t>(20, 0)});
  signature.append("keyId", std::int64_t{0});
  bson::document cluster_time;
  cluster_time.append("clusterTime", now);
  cluster_time.append("signature", std::move(signature));
  reply.set("$clusterTime", std::move(cluster_time));
  reply.set("operationTime", now);
}

}  // namespace mongo_emulator
