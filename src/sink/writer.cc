#include "sink/writer.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <functional>
#include <utility>

#include "bson/convert.h"
#include "bson/json.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/overloaded.h"
#include "mapping/computed_expression.h"
#include "mapping/document_store.h"
#include "mapping/reference.h"
#include "sink/computed_evaluator.h"
#include "sink/failing_children.h"

namespace denormd::sink {

namespace {

const std::string& mapping_name(const mapping::write_op& op) {
  return op.source_mapping->name;
}

const bson::document* token_of(const mapping::write_op& op,
                               std::span<const bson::document> tokens) {
  return op.event < tokens.size() ? &tokens[op.event] : nullptr;
}

}  // namespace

writer::writer(mongo::document_client& conn, metrics::metrics& m, writer_options opts,
               mongo::document_client* evaluate_on)
    : conn_(conn),
      evaluate_on_(evaluate_on != nullptr ? *evaluate_on : conn),
      opts_(std::move(opts)),
      tally_(m, opts_.hold_metrics) {}

void writer::acknowledged(const mapping::write_op& op, std::int64_t now) {
  tally_.count_writes(mapping_name(op), "ok");
  if (op.event_ms > 0) {
    tally_.observe_apply_latency(
        mapping_name(op),
        static_cast<double>(std::max<std::int64_t>(0, now - op.event_ms)) / 1000.0);
  }
}

mongo::status writer::apply(std::span<const mapping::write_op> ops,
                            std::span<const bson::document> event_tokens,
                            const mapping::ns& source) {
  rejected_.clear();
  tally_.clear();
  refused_writes_ = 0;
  saw_refusal_ = false;
  if (opts_.dry_run) {
    for (const auto& op : ops) {
      log::info("writer", "dry run", {{"write", mapping::to_plan_json(op)}});
      tally_.count_writes(mapping_name(op), "dry_run");
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
  // Plan order is kept: consecutive updates go in one bulk write, consecutive fills in one
  // completion (a few round trips for all of them), and either run is finished before an op
  // of another sort starts, as reads and writes planned before must be applied before.
  std::vector<const mapping::write_op*> run;
  std::vector<const mapping::write_op*> fills;
  for (const mapping::mapping* m : order) {
    const std::uint64_t matched_before = matched_;
    auto finish_run = [&]() -> mongo::status {
      auto st = run_bulk(run, event_tokens, source);
      run.clear();
      return st;
    };
    auto finish_fills = [&]() -> mongo::status {
      if (fills.empty()) return {};
      auto st = run_completions(fills, event_tokens, source);
      fills.clear();
      return st;
    };
    for (const auto& op : ops) {
      if (op.source_mapping != m) continue;
      auto complete = [&]() -> mongo::status {
        auto st = finish_run();
        if (st) st = finish_fills();
        return st ? run_completion(op, event_tokens, source) : st;
      };
      auto st = std::visit(
          overloaded{[&](const mapping::update_write&) -> mongo::status {
                       auto done = finish_fills();
                       if (done) run.push_back(&op);
                       return done;
                     },
                     [&](const mapping::refill_write&) { return complete(); },
                     [&](const mapping::recompute_write&) { return complete(); },
                     [&](const mapping::fill_write&) -> mongo::status {
                       auto done = finish_run();
                       if (done) fills.push_back(&op);
                       return done;
                     },
                     [&](const mapping::dead_letter_write& w) {
                       // Writes nothing, so it needs no place in the order.
                       return dead_letter(op, nullptr, bson::document{{"reason", w.reason}},
                                          token_of(op, event_tokens), source, nullptr, &w.subject);
                     }},
          op.what);
      if (!st) return st;
    }
    if (auto st = finish_fills(); !st) return st;
    if (auto st = finish_run(); !st) return st;
    if (opts_.observe_fanout) observe_fanout(*m, ops, matched_ - matched_before);
  }
  return {};
}

void writer::observe_fanout(const mapping::mapping& m, std::span<const mapping::write_op> ops,
                            std::uint64_t matched) {
  // A bulk write's reply counts what the whole run matched, not each statement: its documents
  // go evenly to the events, so the sum and the count stay exact.
  std::vector<std::size_t> events;
  for (const auto& op : ops) {
    if (op.source_mapping == &m && op.as<mapping::dead_letter_write>() == nullptr)
      events.push_back(op.event);
  }
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  if (events.empty()) return;
  tally_.observe_fanout(m.name, static_cast<double>(matched) / static_cast<double>(events.size()),
                        events.size());
}

mongo::status writer::run_bulk(std::span<const mapping::write_op* const> run,
                               std::span<const bson::document> event_tokens,
                               const mapping::ns& source, const mapping::write_op* origin) {
  std::size_t start = 0;
  while (start < run.size()) {
    std::vector<mongo::write_request> requests;
    requests.reserve(run.size() - start);
    for (std::size_t i = start; i < run.size(); ++i) {
      const auto& w = std::get<mapping::update_write>(run[i]->what);
      requests.push_back({w.many, &w.filter, &w.update, &w.array_filters, w.upsert, &w.pipeline});
    }
    const auto& target = run[start]->target;
    auto outcome = conn_.update_bulk(target.db, target.coll, requests, true);
    if (!outcome) return outcome.error();
    const std::int64_t now = wall_ms();
    const std::size_t done = outcome->failed_index ? *outcome->failed_index : requests.size();
    for (std::size_t i = start; i < start + done; ++i)
      acknowledged(*run[i], now);
    matched_ += static_cast<std::uint64_t>(outcome->matched + outcome->upserted);
    if (outcome->modified > 0) tally_.count_modified(mapping_name(*run[start]), outcome->modified);
    if (!outcome->failed_index) return {};
    const auto& bad = *run[start + *outcome->failed_index];
    const auto& bad_write = std::get<mapping::update_write>(bad.what);
    if (outcome->write_error->transient()) return *outcome->write_error;
    saw_refusal_ = true;
    if (bad_write.many && origin == nullptr) {
      // One document (too large, say) must not leave the others stale.
      if (auto st = run_per_document(bad, event_tokens, source); !st) return st;
    } else {
      const bson::document statement = bad_write.pipeline.empty()
                                           ? bad_write.update
                                           : bson::document{{"pipeline", bad_write.pipeline}};
      if (auto st = rejected_by_server(origin != nullptr ? *origin : bad, statement,
                                       *outcome->write_error, token_of(bad, event_tokens), source,
                                       origin != nullptr ? &bad_write.filter : nullptr);
          !st) {
        return st;
      }
    }
    start += *outcome->failed_index + 1;
  }
  return {};
}

mongo::status for_each_id_page(mongo::document_client& conn, const mapping::ns& target,
                               const bson::document& filter, std::size_t page,
                               const std::function<mongo::status(bson::array&&)>& each) {
  mongo::find_options ids_only;
  ids_only.projection = bson::document{{"_id", 1}};
  ids_only.batch_size = static_cast<std::int32_t>(std::min<std::size_t>(page, 100000));
  bson::array ids;
  std::optional<mongo::driver_error> failed;
  auto flush = [&]() -> bool {
    auto st = each(std::exchange(ids, bson::array{}));
    if (!st) failed = st.error();
    return !failed;
  };
  auto st = conn.find_each(target.db, target.coll, filter, ids_only, [&](bson::document&& doc) {
    const bson::value* id = doc.get("_id");
    if (id == nullptr) return true;
    ids.push_back(*id);
    return ids.size() < page || flush();
  });
  if (failed) return *failed;
  if (!st) return st;
  if (!ids.empty() && !flush()) return *failed;
  return {};
}

mongo::status writer::run_per_document(const mapping::write_op& op,
                                       std::span<const bson::document> event_tokens,
                                       const mapping::ns& source) {
  log::info("writer", "a multi-document write was rejected; writing its documents one by one",
            {{"mapping", mapping_name(op)}});
  // The matching documents are streamed and written a chunk at a time: a fan-out of millions
  // holds at most one chunk of statements (each with its own copy of the update). Writing
  // while reading may show a document twice, which only repeats an idempotent write.
  constexpr std::size_t chunk = 1000;
  const auto& w = std::get<mapping::update_write>(op.what);
  return for_each_id_page(conn_, op.target, w.filter, chunk, [&](bson::array&& ids) {
    std::vector<mapping::write_op> single;
    single.reserve(ids.size());
    for (const auto& id : ids) {
      mapping::write_op one = op;
      auto& one_write = std::get<mapping::update_write>(one.what);
      one_write.many = false;
      one_write.filter = bson::document{
          {"$and", bson::array{bson::document{{"_id", mapping::literal(id)}}, w.filter}}};
      single.push_back(std::move(one));
    }
    std::vector<const mapping::write_op*> run;
    for (const auto& one : single)
      run.push_back(&one);
    return run_bulk(run, event_tokens, source, &op);
  });
}

// The kinds' view of the database during one completion: reads and single-document writes,
// with the writer's policy for refused writes (a dead letter) and failures (kept, returned).
class writer::store final : public mapping::document_store {
 public:
  store(writer& w, std::span<const bson::document> tokens, const mapping::ns& source)
      : w_(w), tokens_(tokens), source_(source) {}

  // Documents read from `computed_for`'s source get its computed fields; a field that fails on
  // one becomes a dead letter of `computed_for` and is absent (docs/architecture.md,
  // "Computed fields").
  void compute_for(const mapping::write_op& op) {
    computed_op_ = &op;
    const mapping::mapping* m = op.source_mapping;
    computed_ = mapping::computed_fields(std::span<const mapping::mapping* const>(&m, 1));
  }

  std::optional<std::vector<bson::document>> find(const mapping::ns& where,
                                                  const bson::document& filter,
                                                  const mapping::read_options& opts) override {
    mongo::find_options find;
    find.projection = opts.projection;
    find.sort = opts.sort;
    find.limit = opts.limit;
    auto docs = w_.conn_.find(where.db, where.coll, filter, find);
    if (!docs) return fail(docs.error());
    if (!compute(where, *docs)) return std::nullopt;
    return std::move(docs).value();
  }

  std::optional<std::optional<bson::document>> find_one(const mapping::ns& where,
                                                        const bson::document& filter) override {
    auto doc = w_.conn_.find_one(where.db, where.coll, filter);
    if (!doc) return fail(doc.error());
    if (doc->has_value() && !compute(where, std::span<bson::document>(&**doc, 1)))
      return std::nullopt;
    return std::move(doc).value();
  }

  std::optional<std::vector<bson::document>> aggregate(const mapping::ns& where,
                                                       const bson::array& pipeline) override {
    auto docs = w_.conn_.aggregate(where.db, where.coll, pipeline);
    if (!docs) {
      fail(docs.error());
      // In a transaction (--ha) the refusal aborted it: the fenced writer writes again one
      // call per transaction, where the kind can leave out only what failed.
      if (refusal()) w_.saw_refusal_ = true;
      return std::nullopt;
    }
    return std::move(docs).value();
  }

  std::optional<std::string> refusal() const override {
    // Only a computed field's expression can make a read refused for good.
    if (computed_op_ == nullptr || computed_.empty() || !error_ || !refused_for_the_data(*error_))
      return std::nullopt;
    return error_->to_string();
  }

  std::optional<std::vector<mapping::failing_child>> failing_children(
      const mapping::write_op& op, const bson::document& filter, const std::string& parent_path,
      std::size_t limit) override {
    // Outside any transaction (a refusal there would abort it), as the evaluations are.
    computed_evaluator evaluator(w_.evaluate_on_);
    auto found = find_failing_children(w_.evaluate_on_, evaluator, *op.source_mapping, filter,
                                       parent_path, limit);
    if (!found) return fail(found.error());
    return std::move(found).value();
  }

  bool dead_letter(const mapping::write_op& op, const std::string& reason) override {
    auto st = w_.dead_letter(op, nullptr, bson::document{{"reason", reason}}, token_of(op, tokens_),
                             source_);
    if (!st) fail(st.error());
    return st.has_value();
  }

  std::optional<snapshot> aggregate_snapshot(const mapping::ns& where,
                                             const bson::array& pipeline) override {
    auto read = w_.conn_.aggregate_snapshot(where.db, where.coll, pipeline);
    if (!read) return fail(read.error());
    return snapshot{std::move(read->docs), read->at};
  }

  std::optional<std::vector<mapping::store_write>> update_each(
      const mapping::write_op& op,
      const std::vector<mapping::document_store::single_update>& updates) override {
    std::vector<mapping::store_write> out(updates.size(), mapping::store_write::applied);
    std::vector<mongo::write_request> requests;
    requests.reserve(updates.size());
    for (const auto& u : updates)
      requests.push_back({false, &u.filter, &u.update, &u.array_filters, false});
    // Ordered, so a refused statement is known by its index: it becomes a dead letter and the
    // statements after it are sent again.
    std::size_t start = 0;
    while (start < requests.size()) {
      const std::span<const mongo::write_request> rest(requests.data() + start,
                                                       requests.size() - start);
      auto outcome = w_.conn_.update_bulk(op.target.db, op.target.coll, rest, true);
      if (!outcome) return fail(outcome.error());
      w_.matched_ += static_cast<std::uint64_t>(outcome->matched + outcome->upserted);
      if (outcome->modified > 0) w_.tally_.count_modified(mapping_name(op), outcome->modified);
      if (!outcome->failed_index) break;
      if (outcome->write_error->transient()) return fail(*outcome->write_error);
      w_.saw_refusal_ = true;
      const std::size_t bad = start + *outcome->failed_index;
      const mapping::write_op& bad_op = updates[bad].op != nullptr ? *updates[bad].op : op;
      if (auto st = w_.rejected_by_server(bad_op, updates[bad].update, *outcome->write_error,
                                          token_of(bad_op, tokens_), source_, &updates[bad].filter);
          !st) {
        return fail(st.error());
      }
      out[bad] = mapping::store_write::refused;
      start = bad + 1;
    }
    return out;
  }

  mapping::store_write update_one(const mapping::write_op& op, const bson::document& filter,
                                  const bson::document& update,
                                  const bson::array& array_filters) override {
    const mongo::write_request req{false, &filter, &update, &array_filters, false};
    auto outcome = w_.conn_.update_bulk(op.target.db, op.target.coll, std::span(&req, 1), true);
    if (!outcome) return failed(outcome.error());
    if (outcome->write_error) {
      if (outcome->write_error->transient()) return failed(*outcome->write_error);
      w_.saw_refusal_ = true;
      const bool narrower = &filter != op.selector();
      if (auto st = w_.rejected_by_server(op, update, *outcome->write_error, token_of(op, tokens_),
                                          source_, narrower ? &filter : nullptr);
          !st) {
        return failed(st.error());
      }
      return mapping::store_write::refused;
    }
    w_.matched_ += static_cast<std::uint64_t>(outcome->matched + outcome->upserted);
    if (outcome->modified > 0) w_.tally_.count_modified(mapping_name(op), outcome->modified);
    return mapping::store_write::applied;
  }

  mongo::status status() const {
    if (error_) return *error_;
    return {};
  }

 private:
  std::nullopt_t fail(mongo::driver_error e) {
    error_ = std::move(e);
    return std::nullopt;
  }
  mapping::store_write failed(mongo::driver_error e) {
    error_ = std::move(e);
    return mapping::store_write::failed;
  }

  // Evaluates the computed fields on `docs` when they are the computed mapping's source
  // documents; false when that failed (error_ says why).
  bool compute(const mapping::ns& where, std::span<bson::document> docs) {
    if (computed_op_ == nullptr || computed_.empty() || docs.empty() ||
        !(where == computed_op_->source_mapping->source)) {
      return true;
    }
    std::vector<bson::document*> each;
    for (auto& d : docs)
      each.push_back(&d);
    computed_evaluator evaluator(w_.evaluate_on_);
    auto failures = evaluator.evaluate(where.db, computed_, each);
    if (!failures) {
      fail(failures.error());
      return false;
    }
    for (const auto& f : *failures) {
      const auto* e = computed_.find(f.what.key);
      const bson::value* id = docs[f.doc].get("_id");
      for (const auto& o : e->owners) {
        auto reason =
            mapping::computed_fields::failure_reason(o.field, id ? *id : bson::value(), f.what);
        const mapping::dead_letter_subject subject{where.full(), id ? *id : bson::value(), o.field};
        if (auto st = w_.dead_letter(*computed_op_, nullptr, bson::document{{"reason", reason}},
                                     token_of(*computed_op_, tokens_), source_, nullptr, &subject);
            !st) {
          fail(st.error());
          return false;
        }
      }
    }
    return true;
  }

  writer& w_;
  std::span<const bson::document> tokens_;
  const mapping::ns& source_;
  std::optional<mongo::driver_error> error_;
  const mapping::write_op* computed_op_ = nullptr;
  mapping::computed_fields computed_;
};

mongo::status writer::run_completion(const mapping::write_op& op,
                                     std::span<const bson::document> event_tokens,
                                     const mapping::ns& source) {
  const mapping::write_op* one[] = {&op};
  return run_completions(one, event_tokens, source);
}

mongo::status writer::run_completions(std::span<const mapping::write_op* const> ops,
                                      std::span<const bson::document> event_tokens,
                                      const mapping::ns& source) {
  const mapping::mapping& m = *ops.front()->source_mapping;
  store s(*this, event_tokens, source);
  const bool computed = m.has_computed_fields();
  if (computed) s.compute_for(*ops.front());
  if (!m.visit([&](const auto& k) { return k.complete(m, ops, s); })) {
    assert(!s.status() && "a completion stops only after a failed call");
    // Only an expression can make the server refuse a read for good (an aggregate's $group
    // over a child on which it fails): those ops are dead letters, and the rest goes on.
    if (!computed || !refused_for_the_data(s.status().error())) return s.status();
    saw_refusal_ = true;
    for (const auto* op : ops) {
      if (auto st = rejected_by_server(*op, bson::document{}, s.status().error(),
                                       token_of(*op, event_tokens), source);
          !st) {
        return st;
      }
    }
    return {};
  }
  const std::int64_t now = wall_ms();
  for (const auto* op : ops)
    acknowledged(*op, now);
  return {};
}

mongo::status writer::rejected_by_server(const mapping::write_op& op, const bson::document& update,
                                         const mongo::driver_error& error,
                                         const bson::document* token, const mapping::ns& source,
                                         const bson::document* filter) {
  tally_.count_error("write", error.metric_code());
  ++refused_writes_;
  return dead_letter(
      op, &update,
      bson::document{{"code", static_cast<std::int64_t>(error.code)}, {"message", error.message}},
      token, source, filter);
}

mongo::status writer::dead_letter(const mapping::write_op& op, const bson::document* update,
                                  bson::document error, const bson::document* token,
                                  const mapping::ns& source, const bson::document* filter,
                                  const mapping::dead_letter_subject* subject) {
  if (std::find(rejected_.begin(), rejected_.end(), &op) == rejected_.end()) {
    rejected_.push_back(&op);
  }
  tally_.count_writes(mapping_name(op), "rejected");
  tally_.count_deadletter(mapping_name(op));
  const std::string token_json = token != nullptr ? bson::to_json(*token) : "";
  log::warn("writer",
            op.as<mapping::dead_letter_write>() != nullptr
                ? "event not followed; stored as a dead letter, going on"
                : "write rejected by the server; stored as a dead letter, going on",
            {{"mapping", mapping_name(op)},
             {"source", source.full()},
             {"token", token_json},
             {"error", bson::to_json(error)}});
  bson::document letter{{"mapping", mapping_name(op)},
                        {"source", source.full()},
                        {"target", op.target.full()},
                        {"op", std::string(op.name())},
                        {"filter", filter != nullptr          ? *filter
                                   : op.selector() != nullptr ? *op.selector()
                                                              : bson::document{}},
                        {"error", std::move(error)},
                        {"at", bson::date_time{wall_ms()}}};
  if (token != nullptr) letter.append("token", *token);
  // What it is about, so that an operator finds the document without parsing the reason.
  if (subject != nullptr && subject->id) {
    letter.append("document", bson::document{{"ns", subject->ns}, {"_id", *subject->id}});
  }
  if (subject != nullptr && !subject->field.empty()) letter.append("field", subject->field);
  // The update may be what made the write too large: keep it only when it is small.
  if (update != nullptr && bson::to_bson(*update)->len < 1024 * 1024) {
    letter.append("update", *update);
  }
  const bson::array* array_filters = nullptr;
  if (const auto* u = op.as<mapping::update_write>()) array_filters = &u->array_filters;
  if (const auto* f = op.as<mapping::fill_write>()) array_filters = &f->array_filters;
  if (array_filters != nullptr && !array_filters->empty()) {
    letter.append("arrayFilters", *array_filters);
  }
  return conn_.insert_one(opts_.meta_db, deadletter_collection, letter);
}

}  // namespace denormd::sink
