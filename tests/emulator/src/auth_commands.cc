// Authentication: saslStart, saslContinue (SCRAM-SHA-1 and SCRAM-SHA-256, auth_session.h),
// logout, connectionStatus, and killSessions scoped to the caller's own sessions under --auth.
// The privileges each command needs are checked before it runs (authorization_rules.cc).

#include "command_args.h"
#include "command_authorizer.h"
#include "command_table.h"

namespace mongo_emulator {

namespace {

command_outcome ok_reply(bson::document reply = {}) {
  reply.append("ok", 1.0);
  return command_result{std::move(reply), {}};
}

user_registry& registry(command_context& ctx) {
  return ctx.server.authorizer().users();
}

bson::array role_documents(const std::vector<role_name>& roles) {
  bson::array out;
  for (const auto& r : roles)
    out.emplace_back(r.to_document());
  return out;
}

command_outcome sasl_start(command_context& ctx) {
  auto reply = command_authorizer::session(ctx.conn).sasl_start(ctx.body, ctx.db, registry(ctx));
  if (!reply) return reply.error();
  return ok_reply(std::move(reply).value());
}

command_outcome sasl_continue(command_context& ctx) {
  auto reply = command_authorizer::session(ctx.conn).sasl_continue(ctx.body, ctx.db, registry(ctx));
  if (!reply) return reply.error();
  return ok_reply(std::move(reply).value());
}

// logout (deprecated, still in 6.0): ends the authentication made on this database.
command_outcome logout(command_context& ctx) {
  auth_session& s = command_authorizer::session(ctx.conn);
  if (s.user() && s.user()->db == ctx.db) s.log_out();
  return ok_reply();
}

command_outcome connection_status(command_context& ctx) {
  auto show = bool_arg(ctx.body, "showPrivileges");
  if (!show) return show.error();
  auth_session& s = command_authorizer::session(ctx.conn);
  const user_registry& users = registry(ctx);
  bson::document info;
  bson::array authenticated;
  if (s.user())
    authenticated.emplace_back(bson::document{{"user", s.user()->user}, {"db", s.user()->db}});
  info.append("authenticatedUsers", std::move(authenticated));
  info.append("authenticatedUserRoles", role_documents(s.direct_roles(users)));
  if (show->value_or(false))
    info.append("authenticatedUserPrivileges", s.resolved(users).privileges.to_array());
  return ok_reply(bson::document{{"authInfo", std::move(info)}});
}

// With --auth a session id belongs to the user who used it (MongoDB keys sessions by id and
// user): killSessions ends only the caller's sessions, and an empty list all of them.
command_handler own_sessions_only(command_handler kill_sessions) {
  return [kill_sessions](command_context& ctx) -> command_outcome {
    command_authorizer& authorizer = ctx.server.authorizer();
    const auto* list = ctx.body.get("killSessions");
    if (!authorizer.enforcing() || list == nullptr || !list->is_array()) return kill_sessions(ctx);
    std::vector<bson::document> lsids;
    for (const auto& v : list->as_array()) {
      if (!v.is_document()) return kill_sessions(ctx);  // its error
      lsids.push_back(v.as_document());
    }
    const auto& user = command_authorizer::session(ctx.conn).user();
    auto own = authorizer.own_sessions(user, lsids);
    if (own.empty()) return ok_reply();  // nothing of the caller's to end
    bson::array ids;
    for (auto& lsid : own)
      ids.emplace_back(std::move(lsid));
    bson::document body = ctx.body;
    body.set("killSessions", std::move(ids));
    command_context inner{ctx.server, ctx.conn, ctx.req, body, ctx.db, ctx.started, ctx.txn, {}};
    return kill_sessions(inner);
  };
}

}  // namespace

void register_auth_commands(command_table& table) {
  table["saslStart"] = {sasl_start};
  table["saslContinue"] = {sasl_continue};
  table["logout"] = {logout};
  table["connectionStatus"] = {connection_status};
  if (auto it = table.find("killSessions"); it != table.end())
    it->second.handler = own_sessions_only(it->second.handler);
}

}  // namespace mongo_emulator
