// hello/isMaster, ping, buildInfo, serverStatus, sessions, listDatabases, configureFailPoint,
// and the transaction commands (refused).

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "command_args.h"
#include "command_table.h"
#include "error_codes.h"
#include "query/matcher.h"
#include "query_operators.h"

namespace mongo_emulator {

namespace {

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The reply of a one-node replica-set member: the primary, or during a step-down window a
// secondary of a set that has no primary (no `primary`, no `electionId`). BSON types matter:
// drivers mark a server Unknown when a field has an unexpected type.
command_outcome hello(command_context& ctx) {
  const auto& o = ctx.server.options();
  const std::string& me = ctx.server.address();
  const bool primary = ctx.server.member().primary();
  const bson::oid election_id{{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1}};  // 7fffffff...01
  bson::document r;
  r.append("hosts", bson::array{bson::value(me)});
  r.append("setName", o.rs_name);
  r.append("setVersion", std::int32_t{1});
  r.append("ismaster", primary);
  r.append("isWritablePrimary", primary);
  r.append("secondary", !primary);
  if (primary) r.append("primary", me);
  r.append("me", me);
  if (primary) r.append("electionId", election_id);
  bson::document last_write;
  last_write.append(
      "opTime", bson::document{{"ts", ctx.server.store().cluster_time()}, {"t", std::int64_t{1}}});
  last_write.append("lastWriteDate", bson::date_time{now_ms()});
  r.append("lastWrite", std::move(last_write));
  r.append("maxBsonObjectSize", std::int32_t{16777216});
  r.append("maxMessageSizeBytes", std::int32_t{max_message_size});
  r.append("maxWriteBatchSize", std::int32_t{100000});
  r.append("localTime", bson::date_time{now_ms()});
  r.append("logicalSessionTimeoutMinutes", std::int32_t{30});
  r.append("connectionId", ctx.conn.id);
  r.append("minWireVersion", std::int32_t{0});
  r.append("maxWireVersion", std::int32_t{17});
  r.append("readOnly", false);
  if (const auto* ok = ctx.body.get("helloOk"); ok != nullptr && ok->is<bool>() && ok->as<bool>())
    r.append("helloOk", true);
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome ok_only(command_context&) {
  return command_result{bson::document{{"ok", 1.0}}, {}};
}

command_outcome build_info(command_context&) {
  bson::document r;
  r.append("version", "6.0.13");
  r.append("gitVersion", "mongo-emulator");
  r.append("modules", bson::array{});
  r.append("allocator", "system");
  r.append("javascriptEngine", "none");
  r.append("sysInfo", "deprecated");
  r.append("versionArray",
           bson::array{bson::value(std::int32_t{6}), bson::value(std::int32_t{0}),
                       bson::value(std::int32_t{13}), bson::value(std::int32_t{0})});
  r.append("bits", std::int32_t{64});
  r.append("debug", false);
  r.append("maxBsonObjectSize", std::int32_t{16777216});
  r.append("storageEngines", bson::array{bson::value("inMemory")});
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome server_status(command_context& ctx) {
  using namespace std::chrono;
  const auto up = steady_clock::now() - ctx.server.started();
  bson::document r;
  r.append("host", ctx.server.address());
  r.append("version", "6.0.13");
  r.append("process", "mongod");
  r.append("pid", static_cast<std::int64_t>(::getpid()));
  r.append("uptime", duration<double>(up).count());
  r.append("uptimeMillis", static_cast<std::int64_t>(duration_cast<milliseconds>(up).count()));
  r.append("localTime", bson::date_time{now_ms()});
  bson::document connections;
  connections.append("current", ctx.server.open_connections());
  connections.append("available", std::int32_t{819200});
  connections.append("totalCreated", ctx.conn.id);
  r.append("connections", std::move(connections));
  bson::document cursors;
  cursors.append("open",
                 bson::document{{"total", static_cast<std::int64_t>(ctx.server.cursors().size())}});
  const auto written = ctx.server.store().documents_written();
  bson::document documents{{"deleted", static_cast<std::int64_t>(written.deleted)},
                           {"inserted", static_cast<std::int64_t>(written.inserted)},
                           {"updated", static_cast<std::int64_t>(written.updated)}};
  r.append("metrics", bson::document{{"commands", ctx.server.commands().to_document()},
                                     {"cursor", std::move(cursors)},
                                     {"document", std::move(documents)}});
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome list_databases(command_context& ctx) {
  auto filter = document_arg(ctx.body, "filter");
  if (!filter) return filter.error();
  auto name_only = bool_arg(ctx.body, "nameOnly");
  if (!name_only) return name_only.error();
  bson::array dbs;
  std::int64_t total = 0;
  {
    auto lock = ctx.server.store().lock_for_read();
    for (const auto& name : ctx.server.store().database_names()) {
      std::int64_t size = 0;
      for (const auto* c : ctx.server.store().collections(name))
        size += static_cast<std::int64_t>(c->size()) * 64 + 4096;
      total += size;
      bson::document d;
      d.append("name", name);
      if (!name_only->value_or(false)) {
        d.append("sizeOnDisk", size);
        d.append("empty", false);
      }
      if (*filter != nullptr) {
        auto m = engine::compile_query(**filter);
        if (!m) return fail(m.error().message, m.error().code);
        if (!m->matches(d)) continue;
      }
      dbs.emplace_back(std::move(d));
    }
  }
  bson::document r;
  r.append("databases", std::move(dbs));
  if (!name_only->value_or(false)) {
    r.append("totalSize", total);
    r.append("totalSizeMb", total / (1024 * 1024));
  }
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome configure_fail_point(command_context& ctx) {
  const auto& name = ctx.body.fields().front().val;
  if (!name.is_string()) return fail("configureFailPoint expects a string", codes::type_mismatch);
  fail_point* point = nullptr;
  for (fail_point* p : {&ctx.server.fail_command(), &ctx.server.fail_get_more()}) {
    if (p->name() == name.as_string()) point = p;
  }
  if (point == nullptr) return fail("Cannot find failpoint: " + name.as_string(), codes::bad_value);
  auto r = point->configure(ctx.body);
  if (!r) return r.error();
  r->append("ok", 1.0);
  return command_result{std::move(r).value(), {}};
}

// commitTransaction/abortTransaction of the session's transaction `txnNumber` (the dispatcher
// checked the session fields).
command_outcome end_transaction(command_context& ctx) {
  const auto* lsid = ctx.body.get("lsid");
  auto number = int_arg(ctx.body, "txnNumber");
  if (!number) return number.error();
  if (lsid == nullptr || !lsid->is_document() || !*number)
    return fail("'" + ctx.req.command + "' must be run within a transaction",
                codes::invalid_options);
  auto lock = ctx.server.store().lock_for_write();
  auto& store = ctx.server.store();
  auto ended = ctx.req.command == "commitTransaction"
                   ? store.commit_transaction(lsid->as_document(), **number)
                   : store.abort_transaction(lsid->as_document(), **number);
  if (!ended) return ended.error();
  return command_result{bson::document{{"ok", 1.0}}, {}};
}

// ISO-8601 in UTC with milliseconds, as MongoDB's dateToISOStringLocal prints on a UTC host.
std::string iso_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  char out[64];
  std::snprintf(out, sizeof out, "%s.%03d+00:00", buf, static_cast<int>(ms));
  return out;
}

// replSetStepDown as MongoDB 6.0 parses it (repl_set_commands.cpp) and as a one-node set
// answers it: without `force` no electable secondary can catch up (262, given at once where
// MongoDB first waits secondaryCatchUpPeriodSecs); with it the node is secondary for the period
// (0 or not a number: 60 s), its open transactions are aborted, and connections stay open
// (4.2+). It is primary again when the period ends.
command_outcome repl_set_step_down(command_context& ctx) {
  const auto& first = ctx.body.fields().front().val;
  const bool force = [&] {  // BSONElement::trueValue
    const auto* f = ctx.body.get("force");
    if (f == nullptr || f->is_null() || f->is<bson::undefined_t>()) return false;
    if (f->is<bool>()) return f->as<bool>();
    return !f->is_number() || f->to_double() != 0;
  }();
  // numberLong(): a fraction truncates; bounded so that the cast stays defined.
  const auto whole_seconds = [](const bson::value& v) -> std::int64_t {
    return v.is_number() ? static_cast<std::int64_t>(std::clamp(v.to_double(), -1e9, 1e9)) : 0;
  };
  std::int64_t secs = whole_seconds(first);
  if (secs == 0) secs = 60;
  if (secs < 0) return fail("stepdown period must be a positive integer", codes::bad_value);
  std::int64_t catch_up = force ? 0 : 10;
  if (const auto* c = ctx.body.get("secondaryCatchUpPeriodSecs")) {
    if (!c->is_number())
      return fail("\"secondaryCatchUpPeriodSecs\" had the wrong type. Expected number, found " +
                      std::string(bson::type_name(c->kind())),
                  codes::type_mismatch);
    catch_up = whole_seconds(*c);
  }
  if (catch_up < 0)
    return fail("secondaryCatchUpPeriodSecs period must be a positive or absent", codes::bad_value);
  if (secs < catch_up)
    return fail("stepdown period must be longer than secondaryCatchUpPeriodSecs", codes::bad_value);
  if (!ctx.server.member().primary())
    return fail("not primary so can't step down", codes::not_writable_primary);
  if (!force)
    return fail("No electable secondaries caught up as of " + iso_now() +
                    "Please use the replSetStepDown command with the argument {force: true} to "
                    "force node to step down.",
                codes::exceeded_time_limit);
  // Under the write lock: no write is half-way while the role changes.
  auto lock = ctx.server.store().lock_for_write();
  if (!ctx.server.member().step_down(std::chrono::seconds(secs)))
    return fail("not primary so can't step down", codes::not_writable_primary);
  ctx.server.store().abort_all_transactions();
  return command_result{bson::document{{"ok", 1.0}}, {}};
}

// killSessions: [{id: UUID}, ...]. MongoDB kills the sessions' operations and aborts their
// open transactions (the documents those wrote are free at once); here no operation runs for
// long, so ending the transactions is what it does. An empty list kills every session of the
// user, which without authentication is every session.
command_outcome kill_sessions(command_context& ctx) {
  const auto* list = ctx.body.get("killSessions");
  if (list == nullptr || !list->is_array())
    return fail("BSON field 'killSessions' is missing or not an array", codes::type_mismatch);
  std::vector<bson::document> lsids;
  for (const auto& v : list->as_array()) {
    if (!v.is_document() || v.as_document().get("id") == nullptr ||
        !v.as_document().get("id")->is<bson::binary>())
      return fail("killSessions takes documents of the form {id: UUID}", codes::type_mismatch);
    lsids.push_back(v.as_document());
  }
  auto lock = ctx.server.store().lock_for_write();
  if (lsids.empty()) {
    ctx.server.store().abort_all_transactions();
  } else {
    ctx.server.store().kill_sessions(lsids);
  }
  return command_result{bson::document{{"ok", 1.0}}, {}};
}

command_outcome whats_my_uri(command_context& ctx) {
  return command_result{bson::document{{"you", ctx.server.address()}, {"ok", 1.0}}, {}};
}

}  // namespace

void register_admin_commands(command_table& table) {
  for (const char* name : {"hello", "isMaster", "ismaster"})
    table[name] = {hello};
  for (const char* name :
       {"ping", "endSessions", "killAllSessions", "refreshSessions", "getLastError", "resetError"})
    table[name] = {ok_only};
  table["buildInfo"] = {build_info};
  table["buildinfo"] = {build_info};
  table["serverStatus"] = {server_status};
  table["listDatabases"] = {list_databases, false, true, on_secondary::opt_in};
  table["configureFailPoint"] = {configure_fail_point, false, true};
  table["whatsmyuri"] = {whats_my_uri};
  table["commitTransaction"] = {end_transaction, false, true, on_secondary::never};
  table["abortTransaction"] = {end_transaction, false, true, on_secondary::never};
  table["replSetStepDown"] = {repl_set_step_down, false, true};
  table["killSessions"] = {kill_sessions, false, false, on_secondary::always};
}

}  // namespace mongo_emulator
