#include "update_plan.h"

#include <algorithm>
#include <set>

#include "query_operators.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
namespace query = denormd::query;
using denormd::expected;
using denormd::fail;

namespace {

constexpr int bad_value = 2;
constexpr int failed_to_parse = 9;
constexpr int conflicting_update_operators = 40;
constexpr int empty_field_name = 56;

const std::string array_filter_context = "Error parsing array filter :: caused by :: ";

bool valid_identifier(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

// ExpressionWithPlaceholder: the one top-level field name a filter's predicates share.
expected<std::optional<std::string>> placeholder_of(const bson::document& filter) {
  std::optional<std::string> found;
  auto merge = [&](const std::optional<std::string>& name) -> denormd::status {
    if (!name) return {};
    if (found && *found != *name) {
      return fail(
          "Expected a single top-level field name, found '" + *found + "' and '" + *name + "'",
          failed_to_parse);
    }
    found = name;
    return {};
  };
  for (const auto& f : filter) {
    if (f.name == "$and" || f.name == "$or" || f.name == "$nor") {
      if (!f.val.is_array()) continue;
      for (const auto& item : f.val.as_array()) {
        if (!item.is_document()) continue;
        auto inner = placeholder_of(item.as_document());
        if (!inner) return inner;
        if (auto s = merge(*inner); !s) return denormd::unexpected<denormd::error>{s.error()};
      }
    } else if (!f.name.starts_with('$')) {
      if (auto s = merge(f.name.substr(0, f.name.find('.'))); !s) {
        return denormd::unexpected<denormd::error>{s.error()};
      }
    }
  }
  return found;
}

expected<std::map<std::string, query::matcher>> parse_array_filters(
    const std::vector<bson::document>& filters) {
  std::map<std::string, query::matcher> out;
  for (const auto& filter : filters) {
    auto compiled = compile_query(filter);
    if (!compiled) {
      return fail(array_filter_context + compiled.error().message, compiled.error().code);
    }
    auto name = placeholder_of(filter);
    if (!name) return fail(array_filter_context + name.error().message, name.error().code);
    if (*name && !valid_identifier(**name)) {
      return fail(array_filter_context +
                      "The top-level field name must be an alphanumeric string beginning with a "
                      "lowercase letter, found '" +
                      **name + "'",
                  bad_value);
    }
    if (!*name) {
      return fail("Cannot use an expression without a top-level field name in arrayFilters",
                  failed_to_parse);
    }
    if (out.contains(**name)) {
      return fail("Found multiple array filters with the same top-level field name " + **name,
                  failed_to_parse);
    }
    out.emplace(**name, std::move(compiled).value());
  }
  return out;
}

struct tree_builder {
  update_plan& plan;
  std::set<std::string> used_identifiers;

  // parseArrayFilterIdentifier: the child key for a `$[id]` component.
  expected<std::string> identifier_key(const std::vector<std::string>& parts, std::size_t i,
                                       const std::string& path) {
    if (i == 0) {
      return fail(
          "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position "
          "in path '" +
              path + "'",
          bad_value);
    }
    std::string id = array_filter_identifier(parts[i]);
    if (!id.empty() && !plan.array_filters.contains(id)) {
      return fail("No array filter found for identifier '" + id + "' in path '" + path + "'",
                  bad_value);
    }
    if (!id.empty()) used_identifiers.insert(id);
    return id;
  }

  static update_node* child_of(update_node& n, const std::string& key) {
    if (n.k == update_node::kind::object && is_positional(key)) return n.positional.get();
    const auto it = n.children.find(key);
    return it == n.children.end() ? nullptr : it->second.get();
  }

  static void set_child(update_node& n, const std::string& key, std::unique_ptr<update_node> c) {
    if (n.k == update_node::kind::object && is_positional(key)) {
      n.positional = std::move(c);
    } else {
      n.children.emplace(key, std::move(c));
    }
  }

  // UpdateObjectNode::parseAndMerge for one path.
  denormd::status merge(const std::string& path, op_kind op, const std::string& field,
                        const bson::value& arg) {
    const auto parts = split_path(path);
    if (parts.empty()) return fail("An empty update path is not valid.", empty_field_name);
    if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
      return fail(
          "The update path '" + path + "' contains an empty field name, which is not allowed.",
          empty_field_name);
    }
    const auto positional_count = std::count_if(parts.begin(), parts.end(), is_positional);
    if (positional_count > 1) {
      return fail("Too many positional (i.e. '$') elements found in path '" + path + "'",
                  bad_value);
    }
    if (positional_count == 1 && is_positional(parts[0])) {
      return fail(
          "Cannot have positional (i.e. '$') element in the first position in path '" + path + "'",
          bad_value);
    }
    plan.uses_positional = plan.uses_positional || positional_count == 1;

    auto leaf = modifier::parse(op, field, arg);
    if (!leaf) return denormd::unexpected<denormd::error>{leaf.error()};

    update_node* current = &plan.root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      std::string key = parts[i];
      if (is_array_filter_identifier(parts[i])) {
        auto id = identifier_key(parts, i, path);
        if (!id) return denormd::unexpected<denormd::error>{id.error()};
        key = *id;
      }
      const auto wanted = is_array_filter_identifier(parts[i + 1]) ? update_node::kind::array
                                                                   : update_node::kind::object;
      update_node* child = child_of(*current, key);
      if (child != nullptr && child->k != wanted) {
        return fail("Updating the path '" + path + "' would create a conflict at '" +
                        join_path(parts, 0, i + 1) + "'",
                    conflicting_update_operators);
      }
      if (child == nullptr) {
        auto created = std::make_unique<update_node>();
        created->k = wanted;
        child = created.get();
        set_child(*current, key, std::move(created));
      }
      current = child;
    }
    std::string key = parts.back();
    if (is_array_filter_identifier(key)) {
      auto id = identifier_key(parts, parts.size() - 1, path);
      if (!id) return denormd::unexpected<denormd::error>{id.error()};
      key = *id;
    }
    if (child_of(*current, key) != nullptr) {
      return fail("Updating the path '" + path + "' would create a conflict at '" + path + "'",
                  conflicting_update_operators);
    }
    auto node = std::make_unique<update_node>();
    node->k = update_node::kind::leaf;
    node->leaf = std::move(leaf).value();
    set_child(*current, key, std::move(node));
    return {};
  }
};

}  // namespace

expected<std::shared_ptr<const update_plan>> parse_update_plan(
    const bson::document& update, const std::vector<bson::document>& filters) {
  auto plan = std::make_shared<update_plan>();
  auto parsed_filters = parse_array_filters(filters);
  if (!parsed_filters) return denormd::unexpected<denormd::error>{parsed_filters.error()};
  plan->array_filters = std::move(parsed_filters).value();

  if (update.empty() || !update.fields().front().name.starts_with('$')) {
    plan->replacement = true;
    plan->replacement_document = update;
    return std::shared_ptr<const update_plan>(std::move(plan));
  }

  tree_builder builder{*plan, {}};
  for (const auto& mod : update) {
    const auto op = op_kind_from_name(mod.name);
    if (!op) {
      return fail("Unknown modifier: " + mod.name +
                      ". Expected a valid update modifier or pipeline-style update specified as "
                      "an array",
                  failed_to_parse);
    }
    if (!mod.val.is_document()) {
      return fail("Modifiers operate on fields but we found type " +
                      std::string(bson::type_name(mod.val.kind())) +
                      " instead. For example: {$mod: {<field>: ...}} not {" +
                      element_text(mod.name, mod.val) + "}",
                  failed_to_parse);
    }
    for (const auto& f : mod.val.as_document()) {
      denormd::status s;
      if (*op == op_kind::rename) {
        // $rename occupies its source (so other operators conflict with it) and acts at its
        // destination.
        s = builder.merge(f.name, op_kind::conflict_placeholder, f.name, f.val);
        if (s && !f.val.is_string()) {
          s = fail("The 'to' field for $rename must be a string: " + element_text(f.name, f.val),
                   bad_value);
        }
        if (s) s = builder.merge(f.val.as_string(), op_kind::rename, f.name, f.val);
      } else {
        s = builder.merge(f.name, *op, f.name, f.val);
      }
      if (!s) return denormd::unexpected<denormd::error>{s.error()};
    }
  }
  for (const auto& [id, unused] : plan->array_filters) {
    if (!builder.used_identifiers.contains(id)) {
      return fail("The array filter for identifier '" + id + "' was not used in the update " +
                      document_text(update),
                  failed_to_parse);
    }
  }
  return std::shared_ptr<const update_plan>(std::move(plan));
}

}  // namespace mongo_emulator::engine

namespace mongo_emulator::engine {

expected<std::shared_ptr<const update_plan>> parse_pipeline_update_plan(const bson::array& stages,
                                                                        const bson::document* let) {
  constexpr int invalid_options = 72;
  constexpr int unrecognized_stage = 40324;
  auto plan = std::make_shared<update_plan>();
  plan->pipeline.emplace();
  const auto allowed = [](const std::string& name) {
    return name == "$addFields" || name == "$set" || name == "$project" || name == "$unset" ||
           name == "$replaceRoot" || name == "$replaceWith";
  };
  for (const auto& spec : stages) {
    auto stage = pipeline_stage::parse(spec, let);
    // PipelineExecutor parses the stages, then refuses those not allowed within an update. So
    // an allowed stage's own parse error (168 for an unknown expression operator, 17276 for an
    // undefined variable) is the error; a stage MongoDB knows but the engine cannot parse is
    // refused as not allowed, which it would be once parsed.
    if (!stage && spec.is_document() && spec.as_document().size() == 1) {
      const std::string& name = spec.as_document().fields().front().name;
      if (!allowed(name) && stage.error().code != unrecognized_stage)
        return fail(name + " is not allowed to be used within an update", invalid_options);
    }
    if (!stage) return denormd::unexpected<denormd::error>{stage.error()};
    if (!allowed(stage->name()))
      return fail(stage->name() + " is not allowed to be used within an update", invalid_options);
    plan->pipeline->push_back(std::move(stage).value());
  }
  return std::shared_ptr<const update_plan>(std::move(plan));
}

}  // namespace mongo_emulator::engine
