// insert, update, delete, findAndModify. Write errors are per statement and keep ok: 1;
// ordered batches stop at the first one. Every change goes through storage, which records its
// change event; no-op updates record nothing.

#include <algorithm>

#include "bson_size.h"
#include "command_args.h"
#include "command_table.h"
#include "engine_adapter.h"
#include "error_codes.h"
#include "expression.h"
#include "object_id.h"
#include "query/matcher.h"
#include "query_operators.h"
#include "update.h"

namespace mongo_emulator {

namespace {

using denormd::query::matcher;

struct match {
  std::uint64_t record;
};

// Matching records in natural order, at most `limit` (0: all).
std::vector<match> find_matches(const collection& c, const matcher& m, std::size_t limit) {
  std::vector<match> out;
  for (auto record : c.candidates(m)) {
    if (!m.matches(*c.get(record))) continue;
    out.push_back({record});
    if (limit != 0 && out.size() >= limit) break;
  }
  return out;
}

expected<matcher> compile_query(const bson::value* q, const bson::document& let) {
  if (q == nullptr || q->is_null()) return matcher();
  if (!q->is_document()) return fail("query must be an object", codes::type_mismatch);
  auto m = engine::compile_query(q->as_document(), &let);
  if (!m) return fail(m.error().message, m.error().code);
  return std::move(m).value();
}

// The _id a stored document must have: the given one (validated), or a new ObjectId first.
expected<bson::document> with_id(bson::document doc) {
  if (const auto* id = doc.get("_id")) {
    if (auto valid = engine::validate_id(*id); !valid) return valid.error();
    return doc;
  }
  bson::document out;
  out.fields().reserve(doc.size() + 1);
  out.append("_id", denormd::test::new_object_id());
  for (auto& f : doc.fields())
    out.append(std::move(f.name), std::move(f.val));
  return out;
}

constexpr std::size_t max_user_size = 16 * 1024 * 1024;  // BSONObjMaxUserSize

// The document an insert (or an upsert) stores: `_id` checked or generated, 16 MB at most.
expected<bson::document> new_document(bson::document doc, bool upsert) {
  auto out = with_id(std::move(doc));
  if (!out) return out;
  const std::size_t size = bson_size(*out);
  if (size <= max_user_size) return out;
  if (upsert) return fail("Document to upsert is larger than 16777216", 17420);
  return fail(
      "object to insert too large. size in bytes: " + std::to_string(size) + ", max size: 16777216",
      codes::bson_object_too_large);
}

// An update applied to one matched document, refused when the result passes 16 MB.
expected<prepared_update::result> apply_update(const prepared_update& u, const bson::document& doc,
                                               const matcher& m) {
  auto result = u.apply(doc, m);
  if (result && result->changed && bson_size(result->doc) > max_user_size)
    return fail("Resulting document after update is larger than 16777216", 17419);
  return result;
}

// Accumulates per-statement write errors in MongoDB's reply shape (in the command's
// write_progress, so that they survive a wait for a transaction).
class write_errors {
 public:
  explicit write_errors(bson::array& errors) : errors_(errors) {}
  void add(std::size_t index, const denormd::error& e) {
    bson::document d;
    d.append("index", count_value(index));
    d.append("code", std::int32_t{e.code});
    append_duplicate_key_details(e, d);
    d.append("errmsg", e.message);
    errors_.emplace_back(std::move(d));
  }
  bool empty() const { return errors_.empty(); }
  void append_to(bson::document& reply) {
    if (!errors_.empty()) reply.append("writeErrors", std::move(errors_));
  }

 private:
  bson::array& errors_;
};

// Whether a statement's error means it must wait for a transaction: outside a transaction,
// storage refuses (112) a document an open transaction wrote, before changing anything.
bool waits_for_transaction(const command_context& ctx, const denormd::error& e) {
  return ctx.txn == nullptr && e.code == codes::write_conflict;
}

// Runs the command again once a transaction ends (every end wakes it; a poll bounds the wait
// anyway), from ctx.progress. MongoDB waits until the transaction ends or maxTimeMS passes (50),
// and aborts a transaction older than transactionLifetimeLimitSeconds (60 by default).
command_outcome wait_for_transaction(command_context& ctx) {
  using namespace std::chrono;
  auto& store = ctx.server.store();
  store.abort_expired_transactions();
  auto deadline = steady_clock::now() + milliseconds(100);
  if (auto max_time = int_arg(ctx.body, "maxTimeMS"); max_time && max_time->value_or(0) > 0) {
    const auto limit = ctx.started + milliseconds(**max_time);
    if (steady_clock::now() >= limit)
      return fail("operation exceeded time limit", codes::max_time_ms_expired);
    deadline = std::min(deadline, limit);
  }
  return command_result{{}, await_changes{deadline, store.change_count(), {}}};
}

// Outside a transaction, a statement that would change several documents checks them all
// before changing any, so that waiting for a transaction never repeats half a statement.
denormd::status check_unclaimed(const storage& store, const collection& c,
                                const std::vector<match>& matches) {
  if (c.owner() != nullptr) return {};
  for (const auto& [record] : matches) {
    const auto* id = c.get(record)->get("_id");
    if (id != nullptr && store.written_by_transaction(c, *id))
      return fail("waiting for a transaction", codes::write_conflict);
  }
  return {};
}

struct statement_list {
  const bson::array* items;
  bool ordered;
};

expected<statement_list> statements(const bson::document& body, std::string_view field) {
  auto items = array_arg(body, field);
  if (!items) return items.error();
  if (*items == nullptr)
    return fail("BSON field '" + body.fields().front().name + "." + std::string(field) +
                    "' is missing but a required field",
                40414);
  if ((*items)->empty() || (*items)->size() > 100000)
    return fail("Write batch sizes must be between 1 and 100000. Got " +
                    std::to_string((*items)->size()) + " operations.",
                16);
  auto ordered = bool_arg(body, "ordered");
  if (!ordered) return ordered.error();
  return statement_list{*items, ordered->value_or(true)};
}

command_outcome insert(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto list = statements(ctx.body, "documents");
  if (!list) return list.error();
  auto& progress = ctx.progress;
  write_errors errors(progress.write_errors);
  {
    auto lock = ctx.server.store().lock_for_write();
    auto& c = ctx.server.store().obtain(ctx.db, *name, ctx.txn);
    for (std::size_t i = progress.next; i < list->items->size(); ++i) {
      const auto& item = (*list->items)[i];
      auto doc = item.is_document()
                     ? new_document(item.as_document(), false)
                     : expected<bson::document>(
                           fail("document to insert must be an object", codes::type_mismatch));
      if (doc) {
        auto inserted = ctx.server.store().insert(
            c, std::make_shared<const bson::document>(std::move(doc).value()));
        if (inserted) {
          ++progress.n;
          progress.next = i + 1;
          continue;
        }
        if (waits_for_transaction(ctx, inserted.error())) return wait_for_transaction(ctx);
        errors.add(i, inserted.error());
      } else {
        errors.add(i, doc.error());
      }
      progress.next = i + 1;
      // In a transaction the first error ends the batch, ordered or not.
      if (list->ordered || ctx.txn != nullptr) break;
    }
  }
  bson::document r;
  r.append("n", count_value(progress.n));
  errors.append_to(r);
  return command_result{std::move(r), {}};
}

struct update_counts {
  std::size_t matched = 0;
  std::size_t modified = 0;
  std::optional<bson::value> upserted_id;
};

// One update statement: apply to the matches (first only unless `multi`), or upsert.
expected<update_counts> run_update(storage& store, collection& c, const matcher& m,
                                   const prepared_update& u, bool multi, bool upsert) {
  update_counts counts;
  const auto matches = find_matches(c, m, multi ? 0 : 1);
  if (auto ok = check_unclaimed(store, c, matches); !ok) return ok.error();
  for (const auto& [record] : matches) {
    auto before = c.get(record);
    auto result = apply_update(u, *before, m);
    if (!result) return result.error();
    ++counts.matched;
    if (!result->changed) continue;
    auto doc = std::make_shared<const bson::document>(std::move(result->doc));
    auto ok = result->replaced
                  ? store.replace(c, record, std::move(doc))
                  : store.update(c, record, std::move(doc), std::move(result->update_description));
    if (!ok) return ok.error();
    ++counts.modified;
  }
  if (counts.matched == 0 && upsert) {
    auto doc = u.upsert(m);
    if (!doc) return doc.error();
    auto checked = new_document(std::move(doc).value(), true);
    if (!checked) return checked.error();
    bson::value id = *checked->get("_id");
    auto inserted =
        store.insert(c, std::make_shared<const bson::document>(std::move(checked).value()));
    if (!inserted) return inserted.error();
    counts.upserted_id = std::move(id);
  }
  return counts;
}

// Parses the pieces of one update statement shared by `update` and `findAndModify`.
expected<prepared_update> parse_update_spec(const bson::value* u, const bson::value* filters,
                                            const bson::document& let) {
  if (u == nullptr) return fail("BSON field 'u' is missing but a required field", 40414);
  if (u->is_array()) {
    if (filters != nullptr && !(filters->is_array() && filters->as_array().empty()))
      return fail("arrayFilters may not be specified for pipeline-syle updates",
                  codes::failed_to_parse);
    return prepared_update::parse_pipeline(u->as_array(), &let);
  }
  if (!u->is_document())
    return fail("Update argument must be either an object or an array", codes::failed_to_parse);
  const bson::array* array_filters = nullptr;
  if (filters != nullptr) {
    if (!filters->is_array())
      return fail("BSON field 'arrayFilters' is the wrong type", codes::type_mismatch);
    array_filters = &filters->as_array();
  }
  return prepared_update::parse(u->as_document(), array_filters);
}

command_outcome update(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto list = statements(ctx.body, "updates");
  if (!list) return list.error();
  auto let = engine::evaluate_let(ctx.body.get("let"));
  if (!let) return let.error();
  auto& progress = ctx.progress;
  write_errors errors(progress.write_errors);
  {
    auto lock = ctx.server.store().lock_for_write();
    collection* c = ctx.server.store().find(ctx.db, *name, ctx.txn);
    for (std::size_t i = progress.next; i < list->items->size(); ++i) {
      const auto& item = (*list->items)[i];
      // A failing expression fails its statement (a write error), as on MongoDB.
      auto counts = engine::catch_expression_errors([&]() -> expected<update_counts> {
        if (!item.is_document())
          return fail("update statement must be an object", codes::type_mismatch);
        const auto& s = item.as_document();
        auto m = compile_query(s.get("q"), *let);
        if (!m) return m.error();
        auto u = parse_update_spec(s.get("u"), s.get("arrayFilters"), *let);
        if (!u) return u.error();
        if (s.contains("c")) {
          if (!s.get("u")->is_array())
            return fail("Constant values may only be specified for pipeline updates", 51198);
          return fail("constants (c) in pipeline updates are not supported by mongo-emulator",
                      codes::failed_to_parse);
        }
        auto multi = bool_arg(s, "multi");
        if (!multi) return multi.error();
        auto upsert = bool_arg(s, "upsert");
        if (!upsert) return upsert.error();
        if (multi->value_or(false) && u->is_replacement())
          return fail("multi update is not supported for replacement-style update",
                      codes::failed_to_parse);
        if (c == nullptr) {
          if (!upsert->value_or(false)) return update_counts{};
          c = &ctx.server.store().obtain(ctx.db, *name, ctx.txn);
        }
        return run_update(ctx.server.store(), *c, *m, *u, multi->value_or(false),
                          upsert->value_or(false));
      });
      if (!counts && waits_for_transaction(ctx, counts.error())) return wait_for_transaction(ctx);
      progress.next = i + 1;
      if (!counts) {
        errors.add(i, counts.error());
        if (list->ordered || ctx.txn != nullptr) break;
        continue;
      }
      progress.n += counts->matched;
      progress.modified += counts->modified;
      if (counts->upserted_id) {
        progress.upserted.emplace_back(
            bson::document{{"index", count_value(i)}, {"_id", std::move(*counts->upserted_id)}});
      }
    }
  }
  bson::document r;
  r.append("n", count_value(progress.n + progress.upserted.size()));
  r.append("nModified", count_value(progress.modified));
  if (!progress.upserted.empty()) r.append("upserted", std::move(progress.upserted));
  errors.append_to(r);
  return command_result{std::move(r), {}};
}

command_outcome remove(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto list = statements(ctx.body, "deletes");
  if (!list) return list.error();
  auto let = engine::evaluate_let(ctx.body.get("let"));
  if (!let) return let.error();
  auto& progress = ctx.progress;
  write_errors errors(progress.write_errors);
  {
    auto lock = ctx.server.store().lock_for_write();
    collection* c = ctx.server.store().find(ctx.db, *name, ctx.txn);
    for (std::size_t i = progress.next; i < list->items->size(); ++i) {
      const auto& item = (*list->items)[i];
      auto removed = engine::catch_expression_errors([&]() -> expected<std::size_t> {
        if (!item.is_document())
          return fail("delete statement must be an object", codes::type_mismatch);
        const auto& s = item.as_document();
        auto m = compile_query(s.get("q"), *let);
        if (!m) return m.error();
        auto limit = int_arg(s, "limit");
        if (!limit) return limit.error();
        if (limit->value_or(0) != 0 && **limit != 1)
          return fail(
              "The limit field in delete objects must be 0 or 1. Got " + std::to_string(**limit),
              codes::failed_to_parse);
        if (c == nullptr) return std::size_t{0};
        const auto matches = find_matches(*c, *m, static_cast<std::size_t>(limit->value_or(0)));
        if (auto ok = check_unclaimed(ctx.server.store(), *c, matches); !ok) return ok.error();
        for (const auto& mt : matches) {
          if (auto ok = ctx.server.store().remove(*c, mt.record); !ok) return ok.error();
        }
        return matches.size();
      });
      if (!removed && waits_for_transaction(ctx, removed.error())) return wait_for_transaction(ctx);
      progress.next = i + 1;
      if (!removed) {
        errors.add(i, removed.error());
        if (list->ordered || ctx.txn != nullptr) break;
        continue;
      }
      progress.n += *removed;
    }
  }
  bson::document r;
  r.append("n", count_value(progress.n));
  errors.append_to(r);
  return command_result{std::move(r), {}};
}

command_outcome find_and_modify(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto sort_spec = document_arg(ctx.body, "sort");
  if (!sort_spec) return sort_spec.error();
  auto fields = document_arg(ctx.body, "fields");
  if (!fields) return fields.error();
  auto remove_flag = bool_arg(ctx.body, "remove");
  if (!remove_flag) return remove_flag.error();
  auto return_new = bool_arg(ctx.body, "new");
  if (!return_new) return return_new.error();
  auto upsert = bool_arg(ctx.body, "upsert");
  if (!upsert) return upsert.error();
  const bool removing = remove_flag->value_or(false);
  const auto* update_value = ctx.body.get("update");
  if (removing && update_value != nullptr)
    return fail("Cannot specify both an update and remove=true", codes::failed_to_parse);
  if (!removing && update_value == nullptr)
    return fail("Either an update or remove=true must be specified", codes::failed_to_parse);
  if (removing && upsert->value_or(false))
    return fail("Cannot specify both upsert=true and remove=true", codes::failed_to_parse);
  if (removing && return_new->value_or(false))
    return fail(
        "Cannot specify both new=true and remove=true; 'remove' always returns the "
        "deleted document",
        codes::failed_to_parse);

  auto let = engine::evaluate_let(ctx.body.get("let"));
  if (!let) return let.error();
  auto m = compile_query(ctx.body.get("query"), *let);
  if (!m) return m.error();
  std::optional<prepared_update> u;
  if (!removing) {
    auto parsed = parse_update_spec(update_value, ctx.body.get("arrayFilters"), *let);
    if (!parsed) return parsed.error();
    u = std::move(parsed).value();
  }
  projection_fn project;
  if (*fields != nullptr) {
    auto p = compile_projection(**fields, &*let);
    if (!p) return p.error();
    project = std::move(p).value();
  }
  sort_less less;
  if (*sort_spec != nullptr) {
    auto s = compile_sort(**sort_spec);
    if (!s) return s.error();
    less = std::move(s).value();
  }

  bson::document last_error;
  bson::value value{bson::null_t{}};
  const auto shown = [&](const bson::document& d) { return bson::value(project ? project(d) : d); };
  {
    auto lock = ctx.server.store().lock_for_write();
    auto& store = ctx.server.store();
    collection* c = store.find(ctx.db, *name, ctx.txn);
    std::optional<match> target;
    if (c != nullptr) {
      auto matches = find_matches(*c, *m, less ? 0 : 1);
      if (!matches.empty()) {
        auto best = matches.begin();
        for (auto it = matches.begin(); it != matches.end(); ++it) {
          if (less && less(*c->get(it->record), *c->get(best->record))) best = it;
        }
        target = *best;
      }
    }
    if (target) {
      if (auto ok = check_unclaimed(store, *c, {*target}); !ok) return wait_for_transaction(ctx);
    }
    if (target && removing) {
      auto before = c->get(target->record);
      if (auto ok = store.remove(*c, target->record); !ok) return ok.error();
      last_error.append("n", std::int32_t{1});
      value = shown(*before);
    } else if (target) {
      auto before = c->get(target->record);
      auto result = apply_update(*u, *before, *m);
      if (!result) return result.error();
      doc_ptr after = before;
      if (result->changed) {
        after = std::make_shared<const bson::document>(std::move(result->doc));
        auto ok = result->replaced ? store.replace(*c, target->record, after)
                                   : store.update(*c, target->record, after,
                                                  std::move(result->update_description));
        if (!ok) return ok.error();
      }
      last_error.append("n", std::int32_t{1});
      last_error.append("updatedExisting", true);
      value = shown(return_new->value_or(false) ? *after : *before);
    } else if (!removing && upsert->value_or(false)) {
      if (c == nullptr) c = &store.obtain(ctx.db, *name, ctx.txn);
      auto doc = u->upsert(*m);
      if (!doc) return doc.error();
      auto checked = new_document(std::move(doc).value(), true);
      if (!checked) return checked.error();
      auto stored = std::make_shared<const bson::document>(std::move(checked).value());
      auto inserted = store.insert(*c, stored);
      if (!inserted && waits_for_transaction(ctx, inserted.error()))
        return wait_for_transaction(ctx);
      if (!inserted) return inserted.error();
      last_error.append("n", std::int32_t{1});
      last_error.append("updatedExisting", false);
      last_error.append("upserted", *stored->get("_id"));
      if (return_new->value_or(false)) value = shown(*stored);
    } else {
      last_error.append("n", std::int32_t{0});
      if (!removing) last_error.append("updatedExisting", false);
    }
  }
  bson::document r;
  r.append("lastErrorObject", std::move(last_error));
  r.append("value", std::move(value));
  return command_result{std::move(r), {}};
}

}  // namespace

void register_write_commands(command_table& table) {
  table["insert"] = {insert, true, false, on_secondary::never};
  table["update"] = {update, true, false, on_secondary::never};
  table["delete"] = {remove, true, false, on_secondary::never};
  table["findAndModify"] = {find_and_modify, true, false, on_secondary::never};
  table["findandmodify"] = {find_and_modify, true, false, on_secondary::never};
}

}  // namespace mongo_emulator
