// getParameter, setParameter (server_parameters), top (top_counters) and collStats
// (collection_stats): the monitoring commands an operator runs.

#include "collection_stats.h"
#include "command_args.h"
#include "command_table.h"

namespace mongo_emulator {

namespace {

command_outcome get_parameter(command_context& ctx) {
  auto r = ctx.server.parameters().get(ctx.body);
  if (!r) return r.error();
  r->append("ok", 1.0);
  return command_result{std::move(r).value(), {}};
}

command_outcome set_parameter(command_context& ctx) {
  auto r = ctx.server.parameters().set(ctx.body);
  if (!r) return r.error();
  r->append("ok", 1.0);
  return command_result{std::move(r).value(), {}};
}

command_outcome top(command_context& ctx) {
  return command_result{bson::document{{"totals", ctx.server.top().to_document()}, {"ok", 1.0}},
                        {}};
}

command_outcome coll_stats_command(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto r = coll_stats(ctx.server, ctx.db, *name, ctx.body);
  if (!r) return r.error();
  r->append("ok", 1.0);
  return command_result{std::move(r).value(), {}};
}

}  // namespace

void register_diagnostic_commands(command_table& table) {
  table["getParameter"] = {get_parameter, false, true, on_secondary::always};
  table["setParameter"] = {set_parameter, false, true, on_secondary::always};
  table["top"] = {top, false, true, on_secondary::always};
  table["collStats"] = {coll_stats_command, false, false, on_secondary::always};
}

}  // namespace mongo_emulator
