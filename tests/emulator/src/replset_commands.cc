// replSetGetStatus, replSetGetConfig and replSetResizeOplog: what a one-node replica set's
// member answers (MongoDB 6.0's TopologyCoordinator::prepareStatusResponse, repl_set_config.idl,
// resize_oplog.cpp), from the emulator's real state (member_state, the change history).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "command_args.h"
#include "command_table.h"
#include "error_codes.h"
#include "option_refusals.h"

namespace mongo_emulator {

namespace {

using clock = std::chrono::steady_clock;

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The wall-clock time (ms) of a steady-clock instant.
std::int64_t wall_ms_of(clock::time_point t) {
  using namespace std::chrono;
  return now_ms() - duration_cast<milliseconds>(clock::now() - t).count();
}

// OpTime::append: {ts, t}, the term as a long.
bson::document op_time(bson::timestamp ts) {
  return bson::document{{"ts", ts}, {"t", std::int64_t{1}}};
}

// The member's last applied operation: the newest kept oplog entry (its time and wall clock);
// before any change, the cluster time now.
struct applied {
  bson::timestamp ts;
  std::int64_t wall_ms = 0;
};

applied last_applied(server_state& server) {
  auto lock = server.store().lock_for_read();
  const oplog& log = server.store().history();
  if (log.size() == 0) return {server.store().cluster_time(), now_ms()};
  const oplog_entry& e = log.at(log.size() - 1);
  return {e.ts, e.wall_ms};
}

// This member's entry of `members` (the "add self" branch of prepareStatusResponse).
bson::document self_status(server_state& server, const applied& last, bool primary) {
  using namespace std::chrono;
  const auto uptime = duration_cast<seconds>(clock::now() - server.started()).count();
  bson::document m;
  m.append("_id", std::int32_t{0});
  m.append("name", server.address());
  m.append("health", 1.0);
  m.append("state", std::int32_t{primary ? 1 : 2});
  m.append("stateStr", primary ? "PRIMARY" : "SECONDARY");
  m.append("uptime", static_cast<std::int32_t>(uptime));
  m.append("optime", op_time(last.ts));
  m.append("optimeDate", bson::date_time{std::int64_t{last.ts.t} * 1000});
  m.append("lastAppliedWallTime", bson::date_time{last.wall_ms});
  m.append("lastDurableWallTime", bson::date_time{last.wall_ms});
  m.append("syncSourceHost", "");
  m.append("syncSourceId", std::int32_t{-1});
  m.append("infoMessage", "");
  if (primary) {
    // Elected when the server started, or when its last step-down window ended.
    const auto since = std::max(server.started(), server.member().secondary_until());
    const auto secs = static_cast<std::uint32_t>(wall_ms_of(since) / 1000);
    m.append("electionTime", bson::timestamp{secs, 1});
    m.append("electionDate", bson::date_time{std::int64_t{secs} * 1000});
  }
  m.append("configVersion", std::int32_t{1});
  m.append("configTerm", std::int32_t{1});
  m.append("self", true);
  m.append("lastHeartbeatMessage", "");
  return m;
}

command_outcome repl_set_get_status(command_context& ctx) {
  const applied last = last_applied(ctx.server);
  const bool primary = ctx.server.member().primary();
  bson::document optimes;
  optimes.append("lastCommittedOpTime", op_time(last.ts));
  optimes.append("lastCommittedWallTime", bson::date_time{last.wall_ms});
  optimes.append("readConcernMajorityOpTime", op_time(last.ts));
  optimes.append("appliedOpTime", op_time(last.ts));
  optimes.append("durableOpTime", op_time(last.ts));
  optimes.append("lastAppliedWallTime", bson::date_time{last.wall_ms});
  optimes.append("lastDurableWallTime", bson::date_time{last.wall_ms});
  bson::document r;
  r.append("set", ctx.server.options().rs_name);
  r.append("date", bson::date_time{now_ms()});
  r.append("myState", std::int32_t{primary ? 1 : 2});
  r.append("term", std::int64_t{1});
  r.append("syncSourceHost", "");
  r.append("syncSourceId", std::int32_t{-1});
  r.append("heartbeatIntervalMillis", std::int64_t{2000});
  r.append("majorityVoteCount", std::int32_t{1});
  r.append("writeMajorityCount", std::int32_t{1});
  r.append("votingMembersCount", std::int32_t{1});
  r.append("writableVotingMembersCount", std::int32_t{1});
  r.append("optimes", std::move(optimes));
  r.append("members", bson::array{bson::value(self_status(ctx.server, last, primary))});
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome repl_set_get_config(command_context& ctx) {
  auto commitment = bool_arg(ctx.body, "commitmentStatus");
  if (!commitment) return commitment.error();
  bson::document r;
  r.append("config", ctx.server.local().replset_config(ctx.server));
  // A one-node set's config is committed as soon as it is installed.
  if (commitment->value_or(false)) r.append("commitmentStatus", true);
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

// How MongoDB's StringBuilder prints a double in IDL errors.
std::string double_text(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// ReplSetResizeOplogRequest's safeDouble fields and their validators (resize_oplog.idl).
expected<std::optional<double>> resize_field(const bson::document& body, std::string_view name,
                                             double min, double max) {
  const auto* v = body.get(name);
  if (v == nullptr) return std::optional<double>{};
  if (!v->is_number())
    return fail("BSON field 'replSetResizeOplog." + std::string(name) + "' is the wrong type '" +
                    std::string(bson::type_name(v->kind())) +
                    "', expected types '[long, int, decimal, double]'",
                codes::type_mismatch);
  const double d = v->to_double();
  if (!(d >= min))
    return fail("BSON field '" + std::string(name) + "' value must be >= " + double_text(min) +
                    ", actual value '" + double_text(d) + "'",
                51024);
  if (!(d <= max))
    return fail("BSON field '" + std::string(name) + "' value must be <= " + double_text(max) +
                    ", actual value '" + double_text(d) + "'",
                51024);
  return std::optional<double>{d};
}

// {replSetResizeOplog: 1, size: <MB, 990 to 1 PB>, minRetentionHours: <>= 0>}. The history's
// bound becomes size MB at local_database::bytes_per_entry per entry; minRetentionHours keeps
// younger entries past it, as MongoDB's oplog does.
command_outcome repl_set_resize_oplog(command_context& ctx) {
  for (std::size_t i = 1; i < ctx.body.size(); ++i) {
    const auto& name = ctx.body.fields()[i].name;
    if (name != "size" && name != "minRetentionHours" && !is_generic_argument(name))
      return fail("BSON field 'replSetResizeOplog." + name + "' is an unknown field.",
                  codes::idl_unknown_field);
  }
  auto size = resize_field(ctx.body, "size", 990, 1073741824);
  if (!size) return size.error();
  auto retention = resize_field(ctx.body, "minRetentionHours", 0, HUGE_VAL);
  if (!retention) return retention.error();
  auto lock = ctx.server.store().lock_for_write();
  const oplog& log = ctx.server.store().history();
  std::size_t max_events = log.max_events();
  if (*size) {
    // size MB = size * 1024 * 1024 bytes, at bytes_per_entry (1 KiB) each.
    max_events = static_cast<std::size_t>(
        std::floor(**size * 1024 * 1024 / local_database::bytes_per_entry));
  }
  ctx.server.store().resize_history(max_events, retention->value_or(log.min_retention_hours()));
  return command_result{bson::document{{"ok", 1.0}}, {}};
}

}  // namespace

void register_replset_commands(command_table& table) {
  table["replSetGetStatus"] = {repl_set_get_status, false, true, on_secondary::always};
  table["replSetGetConfig"] = {repl_set_get_config, false, true, on_secondary::always};
  table["replSetResizeOplog"] = {repl_set_resize_oplog, false, true, on_secondary::always};
}

}  // namespace mongo_emulator
