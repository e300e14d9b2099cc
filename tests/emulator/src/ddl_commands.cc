// create, drop, dropDatabase, renameCollection, collMod, createIndexes, listIndexes,
// dropIndexes, listCollections.

#include <algorithm>

#include "command_args.h"
#include "command_table.h"
#include "error_codes.h"
#include "query/matcher.h"
#include "query_operators.h"
#include "value_text.h"

namespace mongo_emulator {

namespace {

command_result ok_reply(bson::document r = {}) {
  r.append("ok", 1.0);
  return command_result{std::move(r), {}};
}

// changeStreamPreAndPostImages: {enabled: bool}
expected<bool> images_option(const bson::value& v) {
  if (!v.is_document())
    return fail("BSON field 'changeStreamPreAndPostImages' is the wrong type",
                codes::type_mismatch);
  const auto* enabled = v.as_document().get("enabled");
  if (enabled == nullptr || !enabled->is<bool>())
    return fail(
        "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required "
        "field",
        40414);
  return enabled->as<bool>();
}

command_outcome create(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  std::optional<bool> images;
  if (const auto* v = ctx.body.get("changeStreamPreAndPostImages")) {
    auto on = images_option(*v);
    if (!on) return on.error();
    images = *on;
  }
  // The options MongoDB's CollectionOptions keeps of what the emulator accepts (option_refusals
  // turned the rest away): an empty validator, `capped: false` and sizes without `capped` are
  // not kept.
  bson::document options;
  for (const auto& f : ctx.body) {
    if (f.name == "validationLevel" || f.name == "validationAction" ||
        f.name == "changeStreamPreAndPostImages")
      options.append(f.name, f.val);
  }
  auto lock = ctx.server.store().lock_for_write();
  auto c = ctx.server.store().create(ctx.db, *name, options);
  if (!c) return c.error();
  if (images) (*c)->set_record_images(*images);
  return ok_reply();
}

command_outcome drop(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto lock = ctx.server.store().lock_for_write();
  const auto* c = ctx.server.store().find(ctx.db, *name);
  const auto indexes = c ? static_cast<std::int32_t>(c->index_specs().size()) : 0;
  if (auto ok = ctx.server.store().drop(ctx.db, *name); !ok) return ok.error();
  bson::document r;
  r.append("nIndexesWas", indexes);
  r.append("ns", ctx.db + "." + *name);
  return ok_reply(std::move(r));
}

command_outcome drop_database(command_context& ctx) {
  auto lock = ctx.server.store().lock_for_write();
  ctx.server.store().drop_database(ctx.db);
  return ok_reply(bson::document{{"dropped", ctx.db}});
}

// Splits "db.coll" at the first dot.
expected<std::pair<std::string, std::string>> split_ns(const bson::value* v,
                                                       std::string_view what) {
  if (v == nullptr || !v->is_string())
    return fail(std::string(what) + " must be a namespace string", codes::type_mismatch);
  const std::string& ns = v->as_string();
  const auto dot = ns.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == ns.size())
    return fail("Invalid " + std::string(what) + " namespace: " + ns, codes::invalid_namespace);
  return std::pair{ns.substr(0, dot), ns.substr(dot + 1)};
}

command_outcome rename_collection(command_context& ctx) {
  auto from = split_ns(&ctx.body.fields().front().val, "source");
  if (!from) return from.error();
  auto to = split_ns(ctx.body.get("to"), "target");
  if (!to) return to.error();
  auto drop_target = bool_arg(ctx.body, "dropTarget");
  if (!drop_target) return drop_target.error();
  auto lock = ctx.server.store().lock_for_write();
  if (auto ok = ctx.server.store().rename(from->first, from->second, to->first, to->second,
                                          drop_target->value_or(false));
      !ok)
    return ok.error();
  return ok_reply();
}

// Arguments every command may carry; not part of what a collMod changes.
bool is_generic_argument(std::string_view name) {
  static constexpr std::string_view generic[] = {
      "$db",          "lsid",      "txnNumber",           "$clusterTime",
      "writeConcern", "comment",   "maxTimeMS",           "$readPreference",
      "apiVersion",   "apiStrict", "apiDeprecationErrors"};
  return std::find(std::begin(generic), std::end(generic), name) != std::end(generic);
}

// collMod's `index: {name | keyPattern, hidden}` (option_refusals turned the other index options
// away), checked in MongoDB's order (coll_mod.cpp).
struct index_change {
  std::optional<std::string> name;  // the index to change; none when it already is as asked
  bool hidden_before = false;
  bool hidden = false;
};

expected<index_change> parse_index_change(const collection& c, const bson::document& spec,
                                          const std::string& ns) {
  const auto* name = spec.get("name");
  const auto* key = spec.get("keyPattern");
  if (name != nullptr && key != nullptr)
    return fail("Cannot specify both key pattern and name.", codes::invalid_options);
  if (name == nullptr && key == nullptr)
    return fail("Must specify either index name or key pattern.", codes::invalid_options);
  const auto* hidden = spec.get("hidden");
  if (hidden == nullptr)
    return fail("no expireAfterSeconds, hidden, unique, or prepareUnique field",
                codes::invalid_options);
  if (name != nullptr && !name->is_string())
    return fail("BSON field 'collMod.index.name' is the wrong type '" +
                    std::string(bson::type_name(name->kind())) + "', expected type 'string'",
                codes::type_mismatch);
  if (key != nullptr && !key->is_document())
    return fail("BSON field 'collMod.index.keyPattern' is the wrong type '" +
                    std::string(bson::type_name(key->kind())) + "', expected type 'object'",
                codes::type_mismatch);
  if (!hidden->is<bool>() && !hidden->is_number())
    return fail("BSON field 'collMod.index.hidden' is the wrong type '" +
                    std::string(bson::type_name(hidden->kind())) + "', expected type 'bool'",
                codes::type_mismatch);
  std::vector<index_spec> found;  // one at most: key patterns are unique per collection here
  for (auto& s : c.index_specs()) {
    if (name != nullptr ? s.name == name->as_string() : s.key == key->as_document())
      found.push_back(std::move(s));
  }
  if (found.empty())
    return fail(
        "cannot find index " +
            (name != nullptr ? name->as_string() : engine::document_text(key->as_document())) +
            " for ns " + ns,
        codes::index_not_found);
  if (found.front().name == "_id_") return fail("can't hide _id index", codes::bad_value);
  index_change change;
  change.hidden = hidden->is<bool>() ? hidden->as<bool>() : hidden->to_double() != 0;
  change.hidden_before = found.front().hidden();
  if (change.hidden != change.hidden_before) change.name = found.front().name;
  return change;
}

command_outcome coll_mod(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto lock = ctx.server.store().lock_for_write();
  auto* c = ctx.server.store().find(ctx.db, *name);
  if (c == nullptr) return fail("ns does not exist", codes::namespace_not_found);
  std::optional<index_change> index;
  if (const auto* spec = ctx.body.get("index")) {
    auto parsed = parse_index_change(*c, spec->as_document(), ctx.db + "." + *name);
    if (!parsed) return parsed.error();
    index = std::move(parsed).value();
  }
  // The `modify` event: what the command changes (an index change only when there is one, as
  // MongoDB logs it), and the options before (with the uuid, as MongoDB's CollectionOptions
  // lists them) and the index's old `hidden`.
  bson::document description;
  for (const auto& f : ctx.body) {
    if (f.name == "collMod" || is_generic_argument(f.name)) continue;
    if (f.name == "index") {
      if (!index->name) continue;
      bson::document shown;
      for (const auto& g : f.val.as_document()) {
        if (g.name == "name" || g.name == "keyPattern") shown.append(g.name, g.val);
      }
      shown.append("hidden", index->hidden);
      description.append(f.name, std::move(shown));
      continue;
    }
    description.append(f.name, f.val);
  }
  std::optional<bool> images;
  if (const auto* v = ctx.body.get("changeStreamPreAndPostImages")) {
    auto on = images_option(*v);
    if (!on) return on.error();
    images = *on;
  }
  bson::document options_before{{"uuid", c->uuid()}};
  for (const auto& f : c->options())
    options_before.append(f.name, f.val);
  bson::document state_before{{"collectionOptions", std::move(options_before)}};
  bson::document reply;
  if (index && index->name) {
    state_before.append("indexOptions", bson::document{{"hidden", index->hidden_before}});
    if (auto was = c->set_index_hidden(*index->name, index->hidden); !was) return was.error();
    reply.append("hidden_old", index->hidden_before);
    reply.append("hidden_new", index->hidden);
  }
  for (const auto& f : ctx.body) {
    if (f.name == "changeStreamPreAndPostImages") {
      c->set_record_images(*images);
      c->options().set(f.name, f.val);
    } else if (f.name == "validationLevel" || f.name == "validationAction") {
      c->options().set(f.name, f.val);
    }
  }
  ctx.server.store().record_ddl(op_type::modify, *c, std::move(description),
                                std::move(state_before));
  return ok_reply(std::move(reply));
}

std::string default_index_name(const bson::document& key) {
  std::string name;
  for (const auto& f : key) {
    if (!name.empty()) name += "_";
    name += f.name + "_";
    if (f.val.is_string()) {
      name += f.val.as_string();
    } else {
      name += std::to_string(static_cast<long long>(f.val.to_double()));
    }
  }
  return name;
}

expected<index_spec> parse_index_spec(const bson::value& v) {
  if (!v.is_document()) return fail("index specification must be an object", codes::type_mismatch);
  const auto& d = v.as_document();
  index_spec spec;
  const auto* key = d.get("key");
  if (key == nullptr || !key->is_document() || key->as_document().empty())
    return fail("Index key pattern must be a non-empty object", 67);
  for (const auto& f : key->as_document()) {
    if (!f.val.is_number() || f.val.to_double() == 0)
      return fail(
          "Values in the index key pattern can only be non-zero numbers (the emulator "
          "supports ascending and descending indexes): " +
              f.name,
          67);
  }
  spec.key = key->as_document();
  if (const auto* name = d.get("name"); name != nullptr) {
    if (!name->is_string() || name->as_string().empty())
      return fail("The index name must be a non-empty string", codes::type_mismatch);
    spec.name = name->as_string();
  } else {
    spec.name = default_index_name(spec.key);
  }
  for (const auto& f : d) {
    if (f.name == "key" || f.name == "name" || f.name == "v") continue;
    if (f.name == "unique") {
      spec.unique = f.val.is<bool>() ? f.val.as<bool>() : f.val.to_double() != 0;
    } else if (f.name == "sparse") {
      spec.sparse = f.val.is<bool>() ? f.val.as<bool>() : f.val.to_double() != 0;
    } else if (f.name == "background" || f.name == "hidden" || f.name == "collation") {
      spec.extra.append(f.name, f.val);
    } else if (f.name == "partialFilterExpression") {
      return fail("partialFilterExpression is not supported by mongo-emulator", codes::bad_value);
    } else {
      return fail("The field '" + f.name +
                      "' is not valid for an index specification. "
                      "Specification: " +
                      f.name,
                  codes::invalid_options);
    }
  }
  if (spec.name == "_id_" && !(spec.key == bson::document{{"_id", std::int32_t{1}}}))
    return fail("The index name '_id_' is reserved for the _id index", codes::bad_value);
  return spec;
}

command_outcome create_indexes(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  auto indexes = array_arg(ctx.body, "indexes");
  if (!indexes) return indexes.error();
  if (*indexes == nullptr || (*indexes)->empty())
    return fail("Must specify at least one index to create", codes::bad_value);
  std::vector<index_spec> specs;
  for (const auto& v : **indexes) {
    auto spec = parse_index_spec(v);
    if (!spec) return spec.error();
    specs.push_back(std::move(spec).value());
  }
  auto lock = ctx.server.store().lock_for_write();
  const bool existed = ctx.server.store().find(ctx.db, *name) != nullptr;
  auto& c = ctx.server.store().obtain(ctx.db, *name);
  const auto before = static_cast<std::int32_t>(c.index_specs().size());
  // MongoDB logs one `createIndexes` per index on an empty collection, and one
  // `commitIndexBuild` for all of them otherwise; both are `createIndexes` events.
  const bool empty = c.size() == 0;
  bson::array built;
  const auto announce = [&] {
    if (built.empty()) return;
    if (empty) {
      for (auto& spec : built)
        ctx.server.store().record_ddl(op_type::create_indexes, c,
                                      bson::document{{"indexes", bson::array{std::move(spec)}}});
    } else {
      ctx.server.store().record_ddl(op_type::create_indexes, c,
                                    bson::document{{"indexes", std::move(built)}});
    }
  };
  for (auto& spec : specs) {
    const bson::document shown = spec.to_document();
    auto created = c.create_index(std::move(spec));
    if (!created) {
      announce();
      return created.error();
    }
    if (*created) built.emplace_back(shown);
  }
  announce();
  bson::document r;
  r.append("numIndexesBefore", before);
  r.append("numIndexesAfter", static_cast<std::int32_t>(c.index_specs().size()));
  r.append("createdCollectionAutomatically", !existed);
  if (static_cast<std::int32_t>(c.index_specs().size()) == before)
    r.append("note", "all indexes already exist");
  return ok_reply(std::move(r));
}

command_outcome list_indexes(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  bson::array batch;
  {
    auto lock = ctx.server.store().lock_for_read();
    const auto* c = ctx.server.store().find(ctx.db, *name);
    if (c == nullptr)
      return fail("ns does not exist: " + ctx.db + "." + *name, codes::namespace_not_found);
    for (const auto& spec : c->index_specs())
      batch.emplace_back(spec.to_document());
  }
  return command_result{
      cursor_reply(0, ctx.db + ".$cmd.listIndexes." + *name, std::move(batch), true), {}};
}

command_outcome drop_indexes(command_context& ctx) {
  auto name = collection_arg(ctx.body);
  if (!name) return name.error();
  const auto* target = ctx.body.get("index");
  if (target == nullptr) return fail("Must specify 'index'", codes::bad_value);
  auto lock = ctx.server.store().lock_for_write();
  auto* c = ctx.server.store().find(ctx.db, *name);
  if (c == nullptr) return fail("ns not found " + ctx.db + "." + *name, codes::namespace_not_found);
  const auto before = static_cast<std::int32_t>(c->index_specs().size());
  std::vector<std::string> names;
  if (target->is_string() && target->as_string() == "*") {
    for (const auto& spec : c->index_specs()) {
      if (spec.name != "_id_") names.push_back(spec.name);
    }
  } else if (target->is_string()) {
    names.push_back(target->as_string());
  } else if (target->is_array()) {
    for (const auto& v : target->as_array()) {
      if (!v.is_string()) return fail("index names must be strings", codes::type_mismatch);
      names.push_back(v.as_string());
    }
  } else if (target->is_document()) {
    const auto& key = target->as_document();
    std::string found;
    for (const auto& spec : c->index_specs()) {
      if (spec.key == key) found = spec.name;
    }
    if (found.empty())
      return fail("can't find index with key: " + std::to_string(key.size()) + " fields",
                  codes::index_not_found);
    names.push_back(found);
  } else {
    return fail("'index' must be a string, an array or an object", codes::type_mismatch);
  }
  for (const auto& n : names) {
    bson::document shown;
    for (const auto& spec : c->index_specs()) {
      if (spec.name == n) shown = spec.to_document();
    }
    if (auto ok = c->drop_index(n); !ok) return ok.error();
    ctx.server.store().record_ddl(op_type::drop_indexes, *c,
                                  bson::document{{"indexes", bson::array{std::move(shown)}}});
  }
  return ok_reply(bson::document{{"nIndexesWas", before}});
}

command_outcome list_collections(command_context& ctx) {
  auto filter = document_arg(ctx.body, "filter");
  if (!filter) return filter.error();
  auto name_only = bool_arg(ctx.body, "nameOnly");
  if (!name_only) return name_only.error();
  denormd::query::matcher m;
  if (*filter != nullptr) {
    auto compiled = engine::compile_query(**filter);
    if (!compiled) return fail(compiled.error().message, compiled.error().code);
    m = std::move(compiled).value();
  }
  bson::array batch;
  {
    auto lock = ctx.server.store().lock_for_read();
    for (const auto* c : ctx.server.store().collections(ctx.db)) {
      bson::document d;
      d.append("name", c->name());
      d.append("type", "collection");
      if (!name_only->value_or(false)) {
        d.append("options", c->options());
        d.append("info", bson::document{{"readOnly", false}, {"uuid", c->uuid()}});
        d.append("idIndex", c->index_specs().front().to_document());
      }
      if (m.matches(d)) batch.emplace_back(std::move(d));
    }
    // A replica-set member's local database has its oplog and configuration.
    if (ctx.db == "local") {
      for (auto& d : ctx.server.local().collection_infos(ctx.server, name_only->value_or(false))) {
        if (m.matches(d)) batch.emplace_back(std::move(d));
      }
    }
  }
  return command_result{cursor_reply(0, ctx.db + ".$cmd.listCollections", std::move(batch), true),
                        {}};
}

}  // namespace

void register_ddl_commands(command_table& table) {
  table["create"] = {create, false, false, on_secondary::never};
  table["drop"] = {drop, false, false, on_secondary::never};
  table["dropDatabase"] = {drop_database, false, false, on_secondary::never};
  table["renameCollection"] = {rename_collection, false, true, on_secondary::never};
  table["collMod"] = {coll_mod, false, false, on_secondary::never};
  table["createIndexes"] = {create_indexes, false, false, on_secondary::never};
  table["listIndexes"] = {list_indexes, false, false, on_secondary::opt_in};
  table["dropIndexes"] = {drop_indexes, false, false, on_secondary::never};
  table["deleteIndexes"] = {drop_indexes, false, false, on_secondary::never};
  table["listCollections"] = {list_collections, false, false, on_secondary::opt_in};
}

}  // namespace mongo_emulator
