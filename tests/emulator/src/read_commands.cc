// find, getMore, killCursors, count, distinct, aggregate (plain pipelines and $changeStream).

#include <algorithm>
#include <limits>

#include "collection_stats.h"
#include "command_args.h"
#include "command_table.h"
#include "engine_adapter.h"
#include "error_codes.h"
#include "expression.h"
#include "option_refusals.h"
#include "query/matcher.h"
#include "query/path.h"
#include "query_operators.h"

namespace mongo_emulator {

namespace {

constexpr std::size_t max_batch_bytes = 16 * 1024 * 1024;
constexpr std::size_t default_first_batch = 101;
constexpr auto default_await_time = std::chrono::milliseconds(1000);

using denormd::query::matcher;

expected<matcher> compile_filter(const bson::document* filter,
                                 const bson::document* let = nullptr) {
  if (filter == nullptr) return matcher();
  auto m = engine::compile_query(*filter, let);
  if (!m) return fail(m.error().message, m.error().code);
  return std::move(m).value();
}

// A non-negative count argument (skip, limit, batchSize) as MongoDB validates it.
expected<std::optional<std::size_t>> count_arg(const bson::document& body, std::string_view field) {
  auto v = int_arg(body, field);
  if (!v) return v.error();
  if (!*v) return std::optional<std::size_t>{};
  if (**v < 0)
    return fail("BSON field '" + std::string(field) + "' value must be >= 0, actual value '" +
                    std::to_string(**v) + "'",
                51024);
  return std::optional<std::size_t>{static_cast<std::size_t>(**v)};
}

// The documents of `c` matching `m`, in natural order.
std::vector<doc_ptr> matching(const collection* c, const matcher& m) {
  std::vector<doc_ptr> out;
  if (c == nullptr) return out;
  for (auto record : c->candidates(m)) {
    auto doc = c->get(record);
    if (m.matches(*doc)) out.push_back(std::move(doc));
  }
  return out;
}

// The matches of `m` in `coll` of the command's database, in natural order (newest first when
// `reverse`; at most `wanted` when not 0): local's oplog and configuration (local_database:
// reading the oldest or newest oplog entry, as rs.printReplicationInfo() does, builds one
// document) or the collection as the command's transaction sees it. Under a storage lock.
std::vector<doc_ptr> natural_matches(command_context& ctx, const std::string& coll,
                                     const matcher& m, bool reverse, std::size_t wanted) {
  if (ctx.db == "local") {
    if (auto local = ctx.server.local().documents(ctx.server, coll, m, reverse, wanted))
      return std::move(*local);
  }
  auto docs = matching(ctx.server.store().find(ctx.db, coll, ctx.txn), m);
  if (reverse) std::reverse(docs.begin(), docs.end());
  return docs;
}

// Serves the first batch and registers the cursor if documents remain.
bson::document first_batch(command_context& ctx, const std::string& ns,
                           std::unique_ptr<query_cursor> results, std::size_t batch_size,
                           bool single_batch, bool no_timeout = false,
                           std::optional<bson::timestamp> at_cluster_time = std::nullopt) {
  bson::array batch = results->next(batch_size, max_batch_bytes);
  std::int64_t id = 0;
  if (!results->exhausted() && !single_batch) {
    auto c = std::make_unique<cursor>();
    c->ns = ns;
    c->no_timeout = no_timeout;
    c->query = std::move(results);
    id = ctx.server.cursors().add(std::move(c));
  }
  return cursor_reply(id, ns, std::move(batch), true, nullptr, at_cluster_time);
}

// Reads `read` under the storage's read lock. For readConcern level "snapshot" also returns the
// cluster time taken under that same lock, so no write falls between it and the read (the
// results are materialized now, so every getMore serves the same snapshot).
template <class Read>
expected<std::optional<bson::timestamp>> locked_read(command_context& ctx, std::string_view command,
                                                     const read_concern& rc, Read&& read) {
  auto lock = ctx.server.store().lock_for_read();
  std::optional<bson::timestamp> at;
  // In a transaction the read is at the transaction's snapshot, and no atClusterTime is returned.
  if (rc.snapshot() && ctx.txn == nullptr) {
    auto t = snapshot_read_time(command, rc, ctx.server.store().cluster_time());
    if (!t) return t.error();
    at = *t;
  }
  read();
  return at;
}

command_outcome find(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto filter = document_arg(ctx.body, "filter");
  if (!filter) return filter.error();
  auto sort_spec = document_arg(ctx.body, "sort");
  if (!sort_spec) return sort_spec.error();
  auto projection_spec = document_arg(ctx.body, "projection");
  if (!projection_spec) return projection_spec.error();
  auto skip = count_arg(ctx.body, "skip");
  if (!skip) return skip.error();
  auto limit = count_arg(ctx.body, "limit");
  if (!limit) return limit.error();
  auto batch_size = count_arg(ctx.body, "batchSize");
  if (!batch_size) return batch_size.error();
  auto single_batch = bool_arg(ctx.body, "singleBatch");
  if (!single_batch) return single_batch.error();
  auto no_timeout = bool_arg(ctx.body, "noCursorTimeout");
  if (!no_timeout) return no_timeout.error();
  auto let = engine::evaluate_let(ctx.body.get("let"));
  if (!let) return let.error();
  auto rc = parse_read_concern(ctx.body);
  if (!rc) return rc.error();

  auto m = compile_filter(*filter, &*let);
  if (!m) return m.error();
  projection_fn project;
  if (*projection_spec != nullptr) {
    auto p = compile_projection(**projection_spec, &*let);
    if (!p) return p.error();
    project = std::move(p).value();
  }
  // {$natural: 1} or {$natural: -1} alone: natural (insertion) order, forwards or backwards.
  bool natural_reverse = false;
  sort_less less;
  if (*sort_spec != nullptr && (*sort_spec)->size() == 1 &&
      (*sort_spec)->fields().front().name == "$natural") {
    const auto& direction = (*sort_spec)->fields().front().val;
    if (!direction.is_number() || (direction.to_double() != 1 && direction.to_double() != -1))
      return fail("$natural sort cannot be set to a value other than -1 or 1.", codes::bad_value);
    natural_reverse = direction.to_double() < 0;
  } else if (*sort_spec != nullptr) {
    auto s = compile_sort(**sort_spec);
    if (!s) return s.error();
    less = std::move(s).value();
  }

  // Without another sort, only the first skip + limit matches are ever served.
  const std::size_t wanted =
      !less && limit->value_or(0) > 0 ? skip->value_or(0) + **limit : std::size_t{0};
  std::vector<doc_ptr> docs;
  auto at = locked_read(ctx, "find", *rc,
                        [&] { docs = natural_matches(ctx, *name, *m, natural_reverse, wanted); });
  if (!at) return at.error();
  if (less) {
    std::stable_sort(docs.begin(), docs.end(),
                     [&](const doc_ptr& a, const doc_ptr& b) { return less(*a, *b); });
  }
  const std::size_t from = std::min(docs.size(), skip->value_or(0));
  docs.erase(docs.begin(), docs.begin() + static_cast<std::ptrdiff_t>(from));
  if (limit->value_or(0) > 0 && docs.size() > **limit) docs.resize(**limit);

  std::size_t first = batch_size->value_or(default_first_batch);
  if (limit->value_or(0) > 0) first = std::min(first, **limit);
  auto results = std::make_unique<query_cursor>(std::move(docs), std::move(project));
  return command_result{
      first_batch(ctx, ctx.db + "." + *name, std::move(results), first,
                  single_batch->value_or(false), no_timeout->value_or(false), *at),
      {}};
}

command_outcome get_more(command_context& ctx) {
  const auto& id_value = ctx.body.fields().front().val;
  std::int64_t id = 0;
  if (id_value.is<std::int64_t>()) {
    id = id_value.as<std::int64_t>();
  } else if (id_value.is<std::int32_t>()) {
    id = id_value.as<std::int32_t>();
  } else {
    return fail("BSON field 'getMore.getMore' is the wrong type '" +
                    std::string(bson::type_name(id_value.kind())) + "', expected type 'long'",
                codes::type_mismatch);
  }
  auto coll = string_arg(ctx.body, "collection");
  if (!coll) return coll.error();
  if (!*coll) return fail("BSON field 'getMore.collection' is missing but a required field", 40414);
  auto batch_size = count_arg(ctx.body, "batchSize");
  if (!batch_size) return batch_size.error();
  auto max_time = int_arg(ctx.body, "maxTimeMS");
  if (!max_time) return max_time.error();

  cursor* c = ctx.server.cursors().pin(id);
  if (c == nullptr)
    return fail("cursor id " + std::to_string(id) + " not found", codes::cursor_not_found);
  const std::string ns = ctx.db + "." + **coll;
  if (ns != c->ns) {
    ctx.server.cursors().unpin(id, false);
    return fail("Requested getMore on namespace '" + ns +
                    "', but cursor belongs to a different "
                    "namespace " +
                    c->ns,
                13);
  }
  if (auto hit = ctx.server.fail_get_more().check("getMore", ctx.conn.app_name)) {
    ctx.server.cursors().unpin(id, true);  // a getMore that fails after checkout kills its cursor
    return fail("Hit the 'failGetMoreAfterCursorCheckout' failpoint", hit->error_code.value_or(1));
  }
  if (c->stream && c->primary_read && !ctx.server.member().primary() &&
      ctx.server.parameters().change_streams_respect_read_preference()) {
    ctx.server.cursors().unpin(id, true);
    return fail(
        "change stream opened with read preference primary: this node is no longer "
        "primary",
        codes::interrupted_due_to_repl_state_change);
  }
  const std::size_t max_docs =
      batch_size->value_or(0) > 0 ? **batch_size : std::numeric_limits<std::size_t>::max();

  if (c->query) {
    // A projection's expression may fail on a later document; the cursor dies with the error.
    auto next = engine::catch_expression_errors(
        [&]() -> expected<bson::array> { return c->query->next(max_docs, max_batch_bytes); });
    if (!next) {
      ctx.server.cursors().unpin(id, true);
      return next.error();
    }
    bson::array batch = std::move(next).value();
    const bool done = c->query->exhausted();
    ctx.server.cursors().unpin(id, done);
    return command_result{cursor_reply(done ? 0 : id, ns, std::move(batch), false), {}};
  }

  // A change stream: an await-data cursor.
  std::uint64_t seen = 0;
  expected<change_stream::batch> batch = change_stream::batch{};
  {
    auto lock = ctx.server.store().lock_for_read();
    seen = ctx.server.store().change_count();
    batch = engine::catch_expression_errors(
        [&] { return c->stream->next(ctx.server.store(), max_docs, max_batch_bytes); });
  }
  if (!batch) {
    ctx.server.cursors().unpin(id, true);  // errors are fatal to a change stream cursor
    return batch.error();
  }
  const auto deadline =
      ctx.started +
      (max_time->value_or(0) > 0 ? std::chrono::milliseconds(**max_time) : default_await_time);
  if (batch->events.empty() && !batch->invalidated && std::chrono::steady_clock::now() < deadline) {
    watch_scope scope = c->stream->scope_watched();  // before unpinning: c may go away then
    ctx.server.cursors().unpin(id, false);
    return command_result{{}, await_changes{deadline, seen, std::move(scope)}};
  }
  ctx.server.cursors().unpin(id, batch->invalidated);
  return command_result{cursor_reply(batch->invalidated ? 0 : id, ns, std::move(batch->events),
                                     false, &batch->post_batch_resume_token),
                        {}};
}

command_outcome kill_cursors(command_context& ctx) {
  // Not collection_arg: cursors of database-level streams live on "$cmd.aggregate".
  if (!ctx.body.fields().front().val.is_string())
    return fail("collection name has invalid type", codes::invalid_namespace);
  auto ids = array_arg(ctx.body, "cursors");
  if (!ids) return ids.error();
  if (*ids == nullptr)
    return fail("BSON field 'killCursors.cursors' is missing but a required field", 40414);
  bson::array killed;
  bson::array not_found;
  for (const auto& v : **ids) {
    if (!v.is<std::int64_t>())
      return fail("Field 'cursors' contains an element that is not of type long",
                  codes::failed_to_parse);
    (ctx.server.cursors().kill(v.as<std::int64_t>()) ? killed : not_found).push_back(v);
  }
  bson::document r;
  r.append("cursorsKilled", std::move(killed));
  r.append("cursorsNotFound", std::move(not_found));
  r.append("cursorsAlive", bson::array{});
  r.append("cursorsUnknown", bson::array{});
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

command_outcome count(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto query = document_arg(ctx.body, "query");
  if (!query) return query.error();
  auto skip = count_arg(ctx.body, "skip");
  if (!skip) return skip.error();
  auto limit = int_arg(ctx.body, "limit");
  if (!limit) return limit.error();
  auto m = compile_filter(*query);
  if (!m) return m.error();
  std::size_t n = 0;
  {
    auto lock = ctx.server.store().lock_for_read();
    const auto* c = ctx.server.store().find(ctx.db, *name);
    auto local = ctx.db == "local" ? ctx.server.local().documents(ctx.server, *name, *m, false, 0)
                                   : std::nullopt;
    if (local) {
      n = local->size();
    } else if (*query == nullptr || (*query)->empty()) {
      n = c ? c->size() : 0;
    } else {
      n = matching(c, *m).size();
    }
  }
  n -= std::min(n, skip->value_or(0));
  if (limit->value_or(0) != 0) {
    n = std::min(n, static_cast<std::size_t>(std::llabs(**limit)));
  }
  return command_result{bson::document{{"n", count_value(n)}, {"ok", 1.0}}, {}};
}

command_outcome distinct(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto key = string_arg(ctx.body, "key");
  if (!key) return key.error();
  if (!*key) return fail("BSON field 'distinct.key' is missing but a required field", 40414);
  auto query = document_arg(ctx.body, "query");
  if (!query) return query.error();
  auto m = compile_filter(*query);
  if (!m) return m.error();
  bson::array values;
  {
    auto lock = ctx.server.store().lock_for_read();
    for (const auto& doc : matching(ctx.server.store().find(ctx.db, *name, ctx.txn), *m)) {
      denormd::query::resolve_path(*doc, **key, [&](const bson::value& v, auto) {
        const auto add = [&](const bson::value& x) {
          const bool seen = std::any_of(values.begin(), values.end(), [&](const bson::value& y) {
            return bson::compare(x, y) == 0;
          });
          if (!seen) values.push_back(x);
        };
        if (v.is_array()) {
          for (const auto& e : v.as_array())
            add(e);
        } else {
          add(v);
        }
        return true;
      });
    }
  }
  std::sort(values.begin(), values.end(),
            [](const bson::value& a, const bson::value& b) { return bson::compare(a, b) < 0; });
  return command_result{bson::document{{"values", std::move(values)}, {"ok", 1.0}}, {}};
}

command_outcome open_change_stream(command_context& ctx, const std::string& coll,
                                   const bson::array& pipeline, std::size_t batch_size,
                                   const bson::document& let) {
  auto c = std::make_unique<cursor>();
  change_stream::batch batch;
  {
    auto lock = ctx.server.store().lock_for_read();
    // An expression error here (no cursor yet) fails the command through the dispatcher.
    auto stream = change_stream::open(ctx.server.store(), ctx.db, coll, pipeline, &let);
    if (!stream) return stream.error();
    auto first = (*stream)->next(ctx.server.store(), batch_size, max_batch_bytes);
    if (!first) return first.error();
    batch = std::move(first).value();
    c->ns = (*stream)->ns();
    c->stream = std::move(stream).value();
    c->primary_read = !secondary_ok(ctx.body);
  }
  const std::string ns = c->ns;
  const std::int64_t id = batch.invalidated ? 0 : ctx.server.cursors().add(std::move(c));
  return command_result{
      cursor_reply(id, ns, std::move(batch.events), true, &batch.post_batch_resume_token), {}};
}

// A pipeline's output as a cursor's first batch on `ns`.
command_outcome pipeline_batch(command_context& ctx, const std::string& ns,
                               std::vector<bson::document> out, std::size_t batch_size,
                               std::optional<bson::timestamp> at) {
  std::vector<doc_ptr> docs;
  docs.reserve(out.size());
  for (auto& d : out)
    docs.push_back(std::make_shared<const bson::document>(std::move(d)));
  return command_result{first_batch(ctx, ns, std::make_unique<query_cursor>(std::move(docs)),
                                    batch_size, false, false, at),
                        {}};
}

// {aggregate: 1, pipeline: [{$documents: <expr>}, ...]}: the stage's documents through the rest
// of the pipeline; no collection is read. The cursor's namespace is MongoDB's "db.$cmd.aggregate".
command_outcome aggregate_documents(command_context& ctx, const bson::array& stages,
                                    std::size_t batch_size, const bson::document& let) {
  auto out = run_documents_pipeline(stages, &let);
  if (!out) return out.error();
  return pipeline_batch(ctx, ctx.db + ".$cmd.aggregate", std::move(out).value(), batch_size,
                        std::nullopt);
}

// A collection's pipeline. A leading $match picks its input through the indexes, like MongoDB's
// planner.
command_outcome aggregate_collection(command_context& ctx, const std::string& coll,
                                     const bson::array& stages, std::size_t batch_size,
                                     const bson::document& let, const read_concern& rc) {
  std::vector<doc_ptr> input;
  matcher m;
  if (!stages.empty()) {
    const auto& first = stages.front().as_document().fields().front();
    if (first.name == "$match" && first.val.is_document()) {
      auto compiled = compile_filter(&first.val.as_document(), &let);
      if (!compiled) return compiled.error();
      m = std::move(compiled).value();
    }
  }
  auto read =
      locked_read(ctx, "aggregate", rc, [&] { input = natural_matches(ctx, coll, m, false, 0); });
  if (!read) return read.error();
  auto out = run_pipeline(stages, input, &let);
  if (!out) return out.error();
  return pipeline_batch(ctx, ctx.db + "." + coll, std::move(out).value(), batch_size, *read);
}

// A pipeline starting with $collStats (collection_stats): its one document through the rest.
command_outcome aggregate_coll_stats(command_context& ctx, const std::string& coll,
                                     const bson::array& stages, std::size_t batch_size,
                                     const bson::document& let) {
  auto stats =
      coll_stats_stage(ctx.server, ctx.db, coll, stages.front().as_document().fields().front().val);
  if (!stats) return stats.error();
  const bson::array rest(stages.begin() + 1, stages.end());
  auto out = run_pipeline(rest, {std::make_shared<const bson::document>(std::move(*stats))}, &let);
  if (!out) return out.error();
  return pipeline_batch(ctx, ctx.db + "." + coll, std::move(out).value(), batch_size, std::nullopt);
}

command_outcome aggregate(command_context& ctx) {
  const auto& target = ctx.body.fields().front().val;
  std::string coll;
  if (target.is_string()) {
    auto name = collection_arg(ctx.body);
    if (!name) return name.error();
    coll = *name;
  } else if (!(target.is_number() && target.to_double() == 1)) {
    return fail("Invalid {aggregate: ...} value: must be a collection name or 1",
                codes::failed_to_parse);
  }
  auto pipeline = array_arg(ctx.body, "pipeline");
  if (!pipeline) return pipeline.error();
  if (*pipeline == nullptr)
    return fail("BSON field 'aggregate.pipeline' is missing but a required field", 40414);
  auto cursor_spec = document_arg(ctx.body, "cursor");
  if (!cursor_spec) return cursor_spec.error();
  if (*cursor_spec == nullptr)
    return fail("The 'cursor' option is required, except for aggregate with the explain argument",
                codes::failed_to_parse);
  auto batch_size = count_arg(**cursor_spec, "batchSize");
  if (!batch_size) return batch_size.error();
  for (const auto& stage : **pipeline) {
    if (!stage.is_document() || stage.as_document().size() != 1)
      return fail("A pipeline stage specification object must contain exactly one field.", 40323);
  }

  auto let = engine::evaluate_let(ctx.body.get("let"));
  if (!let) return let.error();

  auto rc = parse_read_concern(ctx.body);
  if (!rc) return rc.error();

  const auto& stages = **pipeline;
  if (!stages.empty() && stages.front().as_document().fields().front().name == "$changeStream") {
    // LiteParsedDocumentSource::onlySingleReadConcernSupported: only 'majority' when a level is
    // given (an absent one is upconverted).
    if (rc->level && *rc->level != "majority") {
      return fail(
          "Aggregation stage $changeStream cannot run with a readConcern other than "
          "'majority'. Current readConcern: " +
              *rc->level,
          codes::invalid_options);
    }
    return open_change_stream(ctx, coll, stages, batch_size->value_or(default_first_batch), *let);
  }
  if (coll.empty() && !stages.empty() &&
      stages.front().as_document().fields().front().name == "$documents") {
    return aggregate_documents(ctx, stages, batch_size->value_or(default_first_batch), *let);
  }
  if (coll.empty())
    return fail(
        "{aggregate: 1} is only supported with $changeStream or $documents by "
        "mongo-emulator",
        codes::invalid_namespace);

  for (std::size_t i = 1; i < stages.size(); ++i) {  // Pipeline::validate's position rule
    if (stages[i].as_document().fields().front().name == "$collStats")
      return fail("$collStats is only valid as the first stage in a pipeline.", 40602);
  }
  if (!stages.empty() && stages.front().as_document().fields().front().name == "$collStats")
    return aggregate_coll_stats(ctx, coll, stages, batch_size->value_or(default_first_batch), *let);
  return aggregate_collection(ctx, coll, stages, batch_size->value_or(default_first_batch), *let,
                              *rc);
}

}  // namespace

void register_read_commands(command_table& table) {
  table["find"] = {find, false, false, on_secondary::opt_in};
  table["getMore"] = {get_more};
  table["killCursors"] = {kill_cursors};
  table["count"] = {count, false, false, on_secondary::opt_in};
  table["distinct"] = {distinct, false, false, on_secondary::opt_in};
  table["aggregate"] = {aggregate, false, false, on_secondary::opt_in};
}

}  // namespace mongo_emulator
