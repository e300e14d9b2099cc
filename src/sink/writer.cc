#include "sink/writer.h"

#include <chrono>

#include "bson/convert.h"
#include "bson/json.h"
#include "common/log.h"
#include "mapping/planner.h"

namespace denormd::sink {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const std::string& mapping_name(const mapping::write_op& op) {
  return op.source_mapping->name;
}

const bson::document* token_of(const mapping::write_op& op,
                               std::span<const bson::document> tokens) {
  return op.event < tokens.size() ? &tokens[op.event] : nullptr;
}

}  // namespace

writer::writer(mongo::connection& conn, metrics::metrics& m, writer_options opts)
    : conn_(conn), metrics_(m), opts_(std::move(opts)) {}

void writer::acknowledged(const mapping::write_op& op, std::int64_t now) {
  metrics_.count_writes(mapping_name(op), "ok");
  if (op.event_ms > 0) {
    metrics_.observe_apply_latency(
        mapping_name(op),
        static_cast<double>(std::max<std::int64_t>(0, now - op.event_ms)) / 1000.0);
  }
}

mongo::status writer::apply(const std::vector<mapping::write_op>& ops,
                            std::span<const bson::document> event_tokens,
                            const mapping::ns& source) {
  if (opts_.dry_run) {
    for (const auto& op : ops) {
      log::info("writer", "dry run", {{"write", mapping::to_plan_json(op)}});
      metrics_.count_writes(mapping_name(op), "dry_run");
    }
    return {};
  }
  // Group by mapping, keeping plan order inside each group.
  std::vector<const mapping::mapping*> order;
  for (const auto& op : ops) {
    if (std::find(order.begin(), order.end(), op.source_mapping) == order.end()) {
      order.push_back(op.source_mapping);
    }
  }
  std::vector<const mapping::write_op*> run;
  for (const mapping::mapping* m : order) {
    run.clear();
    for (const auto& op : ops) {
      if (op.source_mapping != m) continue;
      if (op.kind != mapping::write_kind::refill && op.kind != mapping::write_kind::fill) {
        run.push_back(&op);
        continue;
      }
      // Reads first, then writes: whatever was planned before must be applied before.
      if (auto st = run_bulk(run, event_tokens, source); !st) return st;
      run.clear();
      auto st = op.kind == mapping::write_kind::refill ? run_refill(op, event_tokens, source)
                                                       : run_fill(op, event_tokens, source);
      if (!st) return st;
    }
    if (auto st = run_bulk(run, event_tokens, source); !st) return st;
  }
  return {};
}

mongo::status writer::run_bulk(std::span<const mapping::write_op* const> run,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source) {
  std::size_t start = 0;
  while (start < run.size()) {
    std::vector<mongo::write_request> requests;
    requests.reserve(run.size() - start);
    for (std::size_t i = start; i < run.size(); ++i) {
      const auto& op = *run[i];
      requests.push_back({op.kind == mapping::write_kind::update_many, &op.filter, &op.update,
                          &op.array_filters, op.upsert});
    }
    const auto& target = run[start]->target;
    auto outcome = conn_.update_bulk(target.db, target.coll, requests, true);
    if (!outcome) return outcome.error();
    const std::int64_t now = now_ms();
    const std::size_t done = outcome->failed_index ? *outcome->failed_index : requests.size();
    for (std::size_t i = start; i < start + done; ++i)
      acknowledged(*run[i], now);
    if (outcome->modified > 0)
      metrics_.count_modified(mapping_name(*run[start]), outcome->modified);
    if (!outcome->failed_index) return {};
    const auto& bad = *run[start + *outcome->failed_index];
    if (outcome->write_error->transient()) return *outcome->write_error;
    if (auto st = dead_letter(bad, bad.update, *outcome->write_error, token_of(bad, event_tokens),
                              source);
        !st) {
      return st;
    }
    start += *outcome->failed_index + 1;
  }
  return {};
}

mongo::status writer::run_refill(const mapping::write_op& op,
                                 std::span<const bson::document> event_tokens,
                                 const mapping::ns& source) {
  const mapping::mapping& m = *op.source_mapping;
  const mapping::refill_query& r = *op.refill;
  mongo::find_options parent_opts;
  parent_opts.projection = bson::document{{"_id", 1}};
  if (r.parent_field != "_id") parent_opts.projection.append(r.parent_field, 1);
  auto parents = conn_.find(op.target.db, op.target.coll, op.filter, parent_opts);
  if (!parents) return parents.error();
  mongo::find_options child_opts;
  child_opts.sort = r.sort;
  child_opts.limit = r.limit;
  for (const auto& parent : *parents) {
    const bson::value* key = parent.find_path(r.parent_field);
    const bson::value* id = parent.get("_id");
    if (key == nullptr || id == nullptr) continue;
    auto children =
        conn_.find(r.source.db, r.source.coll, mapping::children_filter(r, *key), child_opts);
    if (!children) return children.error();
    bson::array elements;
    elements.reserve(children->size());
    for (const auto& child : *children)
      elements.push_back(mapping::planner::make_element(m, child));
    const bson::document filter{{"_id", *id}};
    bson::document set;
    set.append(m.into, std::move(elements));
    bson::document update;
    update.append("$set", std::move(set));
    const mongo::write_request req{false, &filter, &update, nullptr, false};
    auto outcome = conn_.update_bulk(op.target.db, op.target.coll, std::span(&req, 1), true);
    if (!outcome) return outcome.error();
    if (outcome->write_error) {
      if (outcome->write_error->transient()) return *outcome->write_error;
      if (auto st =
              dead_letter(op, update, *outcome->write_error, token_of(op, event_tokens), source);
          !st) {
        return st;
      }
      continue;
    }
    if (outcome->modified > 0) metrics_.count_modified(m.name, outcome->modified);
  }
  acknowledged(op, now_ms());
  return {};
}

mongo::status writer::run_fill(const mapping::write_op& op,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source) {
  const mapping::mapping& m = *op.source_mapping;
  const mapping::fill_query& f = *op.fill;
  const bson::document key{{f.key_field, f.key}};
  auto doc = conn_.find_one(f.source.db, f.source.coll, key);
  if (!doc) return doc.error();
  if (!*doc) {
    // Nothing to copy from (yet): the source's insert event will fill it.
    acknowledged(op, now_ms());
    return {};
  }
  bson::document update = mapping::planner::copy_update(m, &**doc);
  // The source's own stream writes these copies too, from another thread: if it applies a
  // newer source between our read and our write, our older copy would win for good. So read
  // the source again after each write until what was written is still current; a change
  // after that read is applied by the source's stream after our write.
  while (true) {
    const mongo::write_request req{false, &op.filter, &update, &op.array_filters, false};
    auto outcome = conn_.update_bulk(op.target.db, op.target.coll, std::span(&req, 1), true);
    if (!outcome) return outcome.error();
    if (outcome->write_error) {
      if (outcome->write_error->transient()) return *outcome->write_error;
      return dead_letter(op, update, *outcome->write_error, token_of(op, event_tokens), source);
    }
    if (outcome->modified > 0) metrics_.count_modified(mapping_name(op), outcome->modified);
    auto again = conn_.find_one(f.source.db, f.source.coll, key);
    if (!again) return again.error();
    // Deleted since: the copies stay, or go as the delete policy says.
    if (!*again && m.on_source_delete == mapping::delete_policy::keep) break;
    bson::document current = mapping::planner::copy_update(m, *again ? &**again : nullptr);
    if (current == update) break;
    update = std::move(current);
  }
  acknowledged(op, now_ms());
  return {};
}

mongo::status writer::dead_letter(const mapping::write_op& op, const bson::document& update,
                                  const mongo::driver_error& error, const bson::document* token,
                                  const mapping::ns& source) {
  metrics_.count_writes(mapping_name(op), "rejected");
  metrics_.count_deadletter(mapping_name(op));
  metrics_.count_error("write", error.metric_code());
  const std::string token_json = token != nullptr ? bson::to_json(*token) : "";
  log::warn("writer", "write rejected by the server; stored as a dead letter, going on",
            {{"mapping", mapping_name(op)},
             {"source", source.full()},
             {"token", token_json},
             {"error", error.to_string()}});
  bson::document letter{{"mapping", mapping_name(op)},
                        {"source", source.full()},
                        {"target", op.target.full()},
                        {"op", std::string(mapping::kind_name(op.kind))},
                        {"filter", op.filter},
                        {"error", bson::document{{"code", static_cast<std::int64_t>(error.code)},
                                                 {"message", error.message}}},
                        {"at", bson::date_time{now_ms()}}};
  if (token != nullptr) letter.append("token", *token);
  // The update may be what made the write too large: keep it only when it is small.
  if (bson::to_bson(update)->len < 1024 * 1024) letter.append("update", update);
  if (!op.array_filters.empty()) letter.append("arrayFilters", op.array_filters);
  return conn_.insert_one(opts_.meta_db, deadletter_collection, letter);
}

}  // namespace denormd::sink
