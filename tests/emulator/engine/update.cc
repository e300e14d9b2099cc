#include "update.h"

#include "field_path.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
namespace query = denormd::query;
using denormd::expected;
using denormd::fail;

namespace {

constexpr int dollar_prefixed_field_name = 52;
constexpr int invalid_id_field = 53;
constexpr int not_single_value_field = 54;
constexpr int not_exact_value_field = 55;
constexpr int immutable_field = 66;

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

// MongoDB moves `_id` to the front of every document it writes.
void id_first(bson::document& doc) {
  auto& fields = doc.fields();
  for (std::size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].name != "_id") continue;
    bson::field id = std::move(fields[i]);
    fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(i));
    fields.insert(fields.begin(), std::move(id));
    return;
  }
}

// storage_validation for a whole stored document: no top-level `$` names (except a pipeline's
// output, which may have them), a storable `_id`.
denormd::status validate_for_storage(const bson::document& doc, bool allow_dollar_names = false) {
  for (const auto& f : doc) {
    if (!allow_dollar_names && f.name.starts_with('$')) {
      return fail("The dollar ($) prefixed field '" + f.name + "' in '" + f.name +
                      "' is not allowed in the context of an update's replacement document. "
                      "Consider using an aggregation pipeline with $replaceWith.",
                  dollar_prefixed_field_name);
    }
  }
  if (const auto* id = doc.get("_id")) return validate_id(*id);
  return {};
}

bool is_operator_document(const bson::value& v) {
  return v.is_document() && !v.as_document().empty() &&
         v.as_document().fields().front().name.starts_with('$');
}

using equalities = std::vector<std::pair<std::string, bson::value>>;

// pathsupport::extractEqualityMatches over the query as CanonicalQuery normalizes it.
denormd::status collect_equalities(const bson::document& filter, equalities& out, bool strict) {
  auto add = [&](const std::string& path, const bson::value& v) -> denormd::status {
    for (const auto& [existing, unused] : out) {
      if (existing == path) {
        if (!strict) return {};
        return fail("cannot infer query fields to set, path '" + path + "' is matched twice",
                    not_single_value_field);
      }
      const bool nested = query::paths_overlap(existing, path);
      if (nested) {
        if (!strict) return {};
        const bool longer = path.size() > existing.size();
        return fail("cannot infer query fields to set, both paths '" + (longer ? path : existing) +
                        "' and '" + (longer ? existing : path) + "' are matched",
                    not_single_value_field);
      }
    }
    out.emplace_back(path, v);
    return {};
  };
  for (const auto& f : filter) {
    if (f.name == "$and" || f.name == "$or") {
      if (!f.val.is_array()) continue;
      const auto& items = f.val.as_array();
      // A one-branch $or is its branch.
      if (f.name == "$or" && items.size() != 1) continue;
      for (const auto& item : items) {
        if (!item.is_document()) continue;
        if (auto s = collect_equalities(item.as_document(), out, strict); !s) return s;
      }
      continue;
    }
    if (f.name.starts_with('$')) continue;
    if (!is_operator_document(f.val)) {
      if (f.val.is<bson::regex>()) continue;  // a regex literal is a pattern match
      if (auto s = add(f.name, f.val); !s) return s;
      continue;
    }
    for (const auto& op : f.val.as_document()) {
      const bson::value* eq = nullptr;
      if (op.name == "$eq") {
        eq = &op.val;
      } else if ((op.name == "$in" || op.name == "$all") && op.val.is_array() &&
                 op.val.as_array().size() == 1 && !op.val.as_array().front().is<bson::regex>() &&
                 !is_operator_document(op.val.as_array().front())) {
        eq = &op.val.as_array().front();
      }
      if (eq == nullptr) continue;
      if (auto s = add(f.name, *eq); !s) return s;
    }
  }
  return {};
}

// pathsupport::addEqualitiesToDoc: dotted paths become nested documents.
void add_equalities(const equalities& eqs, bson::document& doc) {
  for (const auto& [path, v] : eqs) {
    const auto parts = split_path(path);
    bson::document* current = &doc;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      bson::value* next = current->get(parts[i]);
      if (next == nullptr) next = &current->append(parts[i], bson::document{});
      current = &next->as_document();
    }
    current->append(parts.back(), v);
  }
}

expected<update_description> apply_replacement(const update_plan& plan, const bson::document& doc,
                                               bson::document& out) {
  const auto& replacement = plan.replacement_document;
  if (doc == replacement) return update_description{};
  bson::document result;
  const bson::value* old_id = doc.get("_id");
  if (!replacement.contains("_id") && old_id != nullptr) result.append("_id", *old_id);
  for (const auto& f : replacement)
    result.append(f.name, f.val);
  if (auto s = validate_for_storage(result); !s) return propagate(s.error());
  const bson::value* new_id = result.get("_id");
  if (old_id != nullptr && new_id != nullptr && bson::compare(*old_id, *new_id) != 0) {
    return fail(
        "After applying the update, the (immutable) field '_id' was found to have been altered "
        "to " +
            element_text("_id", *new_id),
        immutable_field);
  }
  id_first(result);
  // MongoDB's only no-op check is the one above (the stored document equals the replacement):
  // a replacement without `_id` rewrites the document even when nothing else differs.
  out = std::move(result);
  update_description described;
  described.replaced = true;
  return described;
}

const bson::value* find_id(const bson::document& d) {
  return d.get("_id");
}

// PipelineExecutor::applyUpdate: run the stages, then ObjectReplaceExecutor's checks (top-level
// `$` names allowed), then the diff.
expected<bson::document> run_update_pipeline(const stage_list& stages, bson::document doc) {
  for (const auto& stage : stages) {
    auto r = stage.transform(std::move(doc));
    if (!r) return propagate(r.error());
    if (!*r) return fail("pipeline update stage dropped the document", 2);  // not reachable
    doc = std::move(**r);
  }
  return doc;
}

expected<bson::document> pipeline_result(const update_plan& plan, const bson::document& doc) {
  auto result = run_update_pipeline(*plan.pipeline, doc);
  if (!result) return result;
  const bson::value* old_id = find_id(doc);
  const bson::value* new_id = find_id(*result);
  if (new_id == nullptr && old_id != nullptr) {
    result->fields().insert(result->fields().begin(), bson::field{"_id", *old_id});
  } else if (old_id != nullptr && bson::compare(*old_id, *new_id) != 0) {
    return fail(
        "After applying the update, the (immutable) field '_id' was found to have been altered "
        "to " +
            element_text("_id", *new_id),
        immutable_field);
  }
  if (const auto* id = find_id(*result)) {
    if (auto s = validate_id(*id); !s) return propagate(s.error());
  }
  id_first(*result);
  return result;
}

expected<update_description> apply_pipeline(const update_plan& plan, const bson::document& doc,
                                            bson::document& out) {
  auto result = pipeline_result(plan, doc);
  if (!result) return propagate(result.error());
  if (identical(*result, doc)) return update_description{};
  auto described = diff_documents(doc, *result);
  out = std::move(result).value();
  if (described) return std::move(*described);
  update_description replaced;
  replaced.replaced = true;
  return replaced;
}

}  // namespace

denormd::status validate_id(const bson::value& id) {
  if (id.is_array() || id.is<bson::regex>() || id.is<bson::undefined_t>()) {
    return fail("The '_id' value cannot be of type " + std::string(bson::type_name(id.kind())),
                invalid_id_field);
  }
  if (id.is_document()) {
    for (const auto& f : id.as_document()) {
      if (f.name.starts_with('$')) {
        return fail("_id fields may not contain '$'-prefixed fields: " + f.name +
                        " is not valid for storage.",
                    dollar_prefixed_field_name);
      }
    }
  }
  return {};
}

expected<update_spec> parse_pipeline_update(const bson::array& stages, const bson::document* let) {
  auto plan = parse_pipeline_update_plan(stages, let);
  if (!plan) return propagate(plan.error());
  return update_spec(std::move(plan).value());
}

expected<update_spec> parse_update(const bson::document& update,
                                   const std::vector<bson::document>& array_filters) {
  auto plan = parse_update_plan(update, array_filters);
  if (!plan) return propagate(plan.error());
  return update_spec(std::move(plan).value());
}

expected<update_description> apply_update(const update_spec& spec, const bson::document& doc,
                                          bson::document& out, const update_context& ctx) {
  if (spec.is_replacement()) return apply_replacement(spec.plan(), doc, out);
  if (spec.is_pipeline()) return apply_pipeline(spec.plan(), doc, out);
  bson::value root(doc);  // the only copy of the document an update makes
  change_diff diff;
  update_applier applier(root, spec.plan(), ctx, &diff);
  auto changed = applier.run();
  if (!changed) return propagate(changed.error());
  // Whether anything changed is what the operators report, as in MongoDB: a $push with a $sort
  // counts as a change even when the array was already sorted.
  if (!*changed) return update_description{};
  bson::document& result = root.as_document();
  id_first(result);
  out = std::move(result);
  return diff.describe();
}

expected<update_description> apply_update(const update_spec& spec, bson::document& doc,
                                          const update_context& ctx) {
  bson::document out;
  auto described = apply_update(spec, doc, out, ctx);
  if (described && !described->empty()) doc = std::move(out);
  return described;
}

bson::document seed_upsert(const query::matcher& query) {
  equalities eqs;
  (void)collect_equalities(query.filter(), eqs, false);
  bson::document seed;
  add_equalities(eqs, seed);
  id_first(seed);
  return seed;
}

expected<bson::document> make_upsert_document(const update_spec& spec, const query::matcher& query,
                                              const bson::value& new_id,
                                              const update_context& ctx) {
  equalities eqs;
  if (auto s = collect_equalities(query.filter(), eqs, true); !s) return propagate(s.error());
  bson::document doc;
  if (spec.is_replacement()) {
    // Only the immutable `_id` comes from the query, and it must be given whole.
    for (const auto& [path, v] : eqs) {
      if (path.starts_with("_id.")) {
        return fail(
            "field at '_id' must be exactly specified, field at sub-path '" + path + "'found",
            not_exact_value_field);
      }
      if (path == "_id") doc.append("_id", v);
    }
    bson::document result = doc;
    const bson::value* seeded = doc.get("_id");
    const auto& replacement = spec.replacement();
    if (!replacement.contains("_id")) {
      for (const auto& f : replacement)
        result.append(f.name, f.val);
    } else {
      const bson::value* given = replacement.get("_id");
      if (seeded != nullptr && bson::compare(*seeded, *given) != 0) {
        return fail(
            "After applying the update, the (immutable) field '_id' was found to have been "
            "altered to " +
                element_text("_id", *given),
            immutable_field);
      }
      result = replacement;
    }
    doc = std::move(result);
    if (auto s = validate_for_storage(doc); !s) return propagate(s.error());
  } else if (spec.is_pipeline()) {
    add_equalities(eqs, doc);
    std::optional<bson::value> seeded_id;
    if (const auto* id = doc.get("_id")) seeded_id = *id;
    auto result = run_update_pipeline(*spec.plan().pipeline, std::move(doc));
    if (!result) return propagate(result.error());
    doc = std::move(result).value();
    const bson::value* id = doc.get("_id");
    if (seeded_id && (id == nullptr || bson::compare(*seeded_id, *id) != 0)) {
      return fail(
          "After applying the update, the (immutable) field '_id' was found to have been "
          "altered to " +
              (id == nullptr ? std::string("_id: missing") : element_text("_id", *id)),
          immutable_field);
    }
  } else {
    add_equalities(eqs, doc);
    update_context insert_ctx = ctx;
    insert_ctx.inserting = true;
    insert_ctx.positional.reset();
    bson::value root(std::move(doc));
    update_applier applier(root, spec.plan(), insert_ctx, nullptr);
    if (auto r = applier.run(); !r) return propagate(r.error());
    doc = std::move(root.as_document());
  }
  if (!doc.contains("_id")) {
    doc.fields().insert(doc.fields().begin(), bson::field{"_id", new_id});
  }
  id_first(doc);
  if (auto s = validate_for_storage(doc, spec.is_pipeline()); !s) return propagate(s.error());
  return doc;
}

}  // namespace mongo_emulator::engine
