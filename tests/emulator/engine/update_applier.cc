#include "update_applier.h"

#include <chrono>

#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

namespace {

constexpr int bad_value = 2;
constexpr int path_not_viable = 28;
constexpr int cannot_backfill_array = 34;
constexpr int conflicting_update_operators = 40;
constexpr int dollar_prefixed_field_name = 52;
constexpr int immutable_field = 66;
constexpr std::size_t max_padding = 1500000;  // pathsupport::kMaxPaddingAllowed

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

// The child of `parent` named `field`: a document field, or an array element by index.
bson::value* child_of(bson::value& parent, const std::string& field) {
  if (parent.is_document()) return parent.as_document().get(field);
  if (parent.is_array()) {
    const auto index = update_index(field);
    auto& items = parent.as_array();
    if (index && *index < items.size()) return &items[*index];
  }
  return nullptr;
}

std::string dotted_with(const runtime_path& taken, const std::vector<std::string>& more) {
  std::string out = dotted(taken);
  for (const auto& part : more) {
    if (!out.empty()) out += '.';
    out += part;
  }
  return out;
}

// How MongoDB prints the element at the end of `path` (`a: 1`, `0: 0` inside an array).
std::string element_at_text(const runtime_path& path, const bson::value& v) {
  return element_text(path.empty() ? std::string_view{} : std::string_view(path.back().name), v);
}

}  // namespace

update_applier::update_applier(bson::value& root, const update_plan& plan,
                               const update_context& ctx, change_diff* diff)
    : root_(root), plan_(plan), ctx_(ctx), diff_(diff) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  now_ = ctx.now.value_or(
      bson::date_time{std::chrono::duration_cast<std::chrono::milliseconds>(now).count()});
  now_timestamp_ = ctx.now_timestamp.value_or(
      bson::timestamp{static_cast<std::uint32_t>(now_.millis / 1000), 1});
}

expected<bool> update_applier::run() {
  return apply_group({&plan_.root}, location{}, diff_ != nullptr);
}

bson::value* update_applier::resolve(const runtime_path& path) {
  bson::value* current = &root_;
  for (const auto& c : path) {
    current = child_of(*current, c.name);
    if (current == nullptr) return nullptr;
  }
  return current;
}

std::string update_applier::id_text() const {
  if (root_.is_document()) {
    if (const auto* id = root_.as_document().get("_id")) return element_text("_id", *id);
  }
  return "no id";
}

modifier_inputs update_applier::inputs_for(const location& loc) const {
  modifier_inputs in;
  in.id_text = id_text();
  in.path = dotted(loc.taken);
  in.field = loc.taken.empty() ? std::string{} : loc.taken.back().name;
  in.now = now_;
  in.now_timestamp = now_timestamp_;
  return in;
}

denormd::status update_applier::check_not_immutable(const runtime_path& path) const {
  if (!path.empty() && path.front().name == "_id") {
    return fail("Performing an update on the path '" + dotted(path) +
                    "' would modify the immutable field '_id'",
                immutable_field);
  }
  return {};
}

// UpdateNode::createUpdateNodeByMerging: nodes reaching the same element merge when all are
// documents or all are arrays (recursively); a leaf meeting anything is a conflict.
denormd::status update_applier::check_mergeable(const group& nodes, const std::string& path) const {
  if (nodes.size() < 2) return {};
  const auto k = nodes.front()->k;
  for (const auto* n : nodes) {
    if (n->k != k || k == update_node::kind::leaf) {
      return fail("Update created a conflict at '" + path + "'", conflicting_update_operators);
    }
  }
  std::map<std::string, group, path_less> merged;
  group positional;
  for (const auto* n : nodes) {
    for (const auto& [key, child] : n->children)
      merged[key].push_back(child.get());
    if (n->positional) positional.push_back(n->positional.get());
  }
  for (const auto& [key, children] : merged) {
    const std::string name = k == update_node::kind::array ? "$[" + key + "]" : key;
    if (auto s = check_mergeable(children, path + "." + name); !s) return s;
  }
  return check_mergeable(positional, path + ".$");
}

expected<bool> update_applier::apply_group(const group& nodes, location loc, bool logging) {
  switch (nodes.front()->k) {
    case update_node::kind::object:
      return apply_object(nodes, loc, logging);
    case update_node::kind::array:
      return apply_array(nodes, loc, logging);
    case update_node::kind::leaf:
      return apply_leaf(*nodes.front()->leaf, loc, logging);
  }
  return false;
}

// UpdateObjectNode::apply.
expected<bool> update_applier::apply_object(const group& nodes, const location& start,
                                            bool logging) {
  location loc = start;
  std::map<std::string, group, path_less> merged;
  group positional;
  for (const auto* n : nodes) {
    for (const auto& [key, child] : n->children)
      merged[key].push_back(child.get());
    if (n->positional) positional.push_back(n->positional.get());
  }
  bool apply_positional = !positional.empty();
  std::string matched;
  if (apply_positional) {
    if (!ctx_.positional) {
      return fail("The positional operator did not find the match needed from the query.",
                  bad_value);
    }
    matched = std::to_string(*ctx_.positional);
  }
  bool changed = false;
  auto step = [&](const group& children, const std::string& field) -> denormd::status {
    auto r = apply_child(children, field, loc, logging);
    if (!r) return propagate(r.error());
    changed = changed || *r;
    return {};
  };
  for (const auto& [field, children] : merged) {
    if (apply_positional && field == matched) {
      group combined = positional;
      combined.insert(combined.end(), children.begin(), children.end());
      const std::string base = dotted_with(loc.taken, loc.to_create);
      if (auto s = check_mergeable(combined, base.empty() ? matched : base + "." + matched); !s) {
        return propagate(s.error());
      }
      if (auto s = step(combined, field); !s) return propagate(s.error());
      apply_positional = false;
      continue;
    }
    // The matched position is compared as a string here, as MongoDB does.
    if (apply_positional && matched < field) {
      if (auto s = step(positional, matched); !s) return propagate(s.error());
      apply_positional = false;
    }
    if (auto s = step(children, field); !s) return propagate(s.error());
  }
  if (apply_positional) {
    if (auto s = step(positional, matched); !s) return propagate(s.error());
  }
  return changed;
}

// applyChild: descends into `field`, then follows the path if the child created it.
expected<bool> update_applier::apply_child(const group& nodes, const std::string& field,
                                           location& loc, bool logging) {
  location child = loc;
  bson::value* here = loc.to_create.empty() ? resolve(loc.taken) : nullptr;
  if (here != nullptr && child_of(*here, field) != nullptr) {
    child.taken.push_back({field, here->is_array()});
  } else {
    child.to_create.push_back(field);
  }
  auto r = apply_group(nodes, std::move(child), logging);
  if (!r) return r;
  if (!loc.to_create.empty()) {
    bson::value* base = resolve(loc.taken);
    if (base != nullptr && child_of(*base, loc.to_create.front()) != nullptr) {
      for (const auto& part : loc.to_create) {
        bson::value* parent = resolve(loc.taken);
        loc.taken.push_back({part, parent->is_array()});
      }
      loc.to_create.clear();
    }
  }
  return r;
}

// UpdateArrayNode::apply.
expected<bool> update_applier::apply_array(const group& nodes, const location& loc, bool logging) {
  if (!loc.to_create.empty()) {
    return fail("The path '" + dotted_with(loc.taken, loc.to_create) +
                    "' must exist in the document in order to apply array updates.",
                bad_value);
  }
  bson::value* target = resolve(loc.taken);
  if (!target->is_array()) {
    return fail(
        "Cannot apply array updates to non-array element " + element_at_text(loc.taken, *target),
        bad_value);
  }
  std::map<std::string, group, path_less> merged;
  for (const auto* n : nodes) {
    for (const auto& [key, child] : n->children)
      merged[key].push_back(child.get());
  }
  // Which updates apply to which element is decided before any element changes. Updates below
  // an element never change the array's length, so its size is all the later loop needs.
  auto& items = target->as_array();
  const std::size_t size = items.size();
  std::vector<group> matching(size);
  std::size_t matched_elements = 0;
  bson::document probe;  // {id: element}, what an array filter is matched against
  for (std::size_t i = 0; i < size; ++i) {
    for (const auto& [id, children] : merged) {
      if (!id.empty()) {
        const auto& filter = plan_.array_filters.at(id);
        // The element is moved into the probe and back rather than copied.
        probe.fields().clear();
        probe.append(id, std::move(items[i]));
        const bool hit = filter.matches(probe);
        items[i] = std::move(probe.fields().front().val);
        if (!hit) continue;
      }
      matching[i].insert(matching[i].end(), children.begin(), children.end());
    }
    if (!matching[i].empty()) ++matched_elements;
  }
  // With several elements to update, MongoDB logs the array (or the one changed element)
  // instead of each change inside it.
  const bool children_log = logging && matched_elements <= 1;
  std::size_t modified = 0;
  std::size_t last_modified = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (matching[i].empty()) continue;
    location element{loc.taken, {}};
    element.taken.push_back({std::to_string(i), true});
    if (auto s = check_mergeable(matching[i], dotted(element.taken)); !s) {
      return propagate(s.error());
    }
    auto r = apply_group(matching[i], element, children_log);
    if (!r) return r;
    if (*r) {
      ++modified;
      last_modified = i;
    }
  }
  if (logging && !children_log) {
    if (modified > 1) {
      diff_->updated(loc.taken, *resolve(loc.taken));
    } else if (modified == 1) {
      runtime_path path = loc.taken;
      path.push_back({std::to_string(last_modified), true});
      diff_->updated(path, *resolve(path));
    }
  }
  return modified > 0;
}

// ModifierNode::apply.
expected<bool> update_applier::apply_leaf(const modifier& mod, const location& loc, bool logging) {
  if (mod.kind() == op_kind::conflict_placeholder) return false;
  if (mod.kind() == op_kind::rename) return apply_rename(mod, loc, logging);
  if (mod.insert_only() && !ctx_.inserting) return false;
  if (!loc.to_create.empty()) return apply_missing(mod, loc, logging);
  return apply_existing(mod, loc, logging);
}

expected<bool> update_applier::apply_existing(const modifier& mod, const location& loc,
                                              bool logging) {
  if (mod.kind() == op_kind::unset) {
    runtime_path parent_path(loc.taken.begin(), loc.taken.end() - 1);
    bson::value* parent = resolve(parent_path);
    // $unset of an array element sets it to null rather than shifting the array.
    if (parent->is_array()) {
      *resolve(loc.taken) = bson::value{};
    } else {
      parent->as_document().erase(loc.taken.back().name);
    }
    if (auto s = check_not_immutable(loc.taken); !s) return propagate(s.error());
    if (logging) {
      if (parent->is_array()) {
        diff_->updated(loc.taken, bson::value{});
      } else {
        diff_->deleted(loc.taken);
      }
    }
    return true;
  }
  bson::value* target = resolve(loc.taken);
  auto result = mod.update_existing(*target, inputs_for(loc));
  if (!result) return propagate(result.error());
  if (result->k == modify_result::kind::noop) return false;
  if (auto s = check_not_immutable(loc.taken); !s) return propagate(s.error());
  if (!logging) return true;
  if (result->k == modify_result::kind::normal) {
    diff_->updated(loc.taken, *target);
    return true;
  }
  // Only elements were appended: MongoDB logs each new element (`arr.N`), not the array.
  const auto& items = target->as_array();
  for (std::size_t i = items.size() - result->appended; i < items.size(); ++i) {
    runtime_path path = loc.taken;
    path.push_back({std::to_string(i), true});
    diff_->created(path, path.size() - 1, items[i]);
  }
  return true;
}

expected<bool> update_applier::apply_missing(const modifier& mod, const location& loc,
                                             bool logging) {
  if (mod.creates_paths()) {
    if (auto s = create(loc, mod.new_value(inputs_for(loc)), logging); !s) {
      return propagate(s.error());
    }
    return true;
  }
  if (!mod.allows_non_viable()) {
    // UpdateLeafNode::checkViability: a path blocked by a scalar is an error even for
    // operators that do nothing on missing paths.
    const bson::value* here = resolve(loc.taken);
    const bool viable = here->is_document() ||
                        (here->is_array() && update_index(loc.to_create.front()).has_value());
    if (!viable) {
      return fail("Cannot use the part (" + loc.to_create.front() + ") of (" + dotted(loc.taken) +
                      "." + join_path(loc.to_create) + ") to traverse the element ({" +
                      element_at_text(loc.taken, *here) + "})",
                  path_not_viable);
    }
  }
  return false;
}

denormd::status update_applier::create(const location& loc, bson::value v, bool logging) {
  bson::value* base = resolve(loc.taken);
  const std::string& first = loc.to_create.front();
  const auto cannot_create = [&] {
    return fail("Cannot create field '" + first + "' in element {" +
                    element_at_text(loc.taken, *base) + "}",
                path_not_viable);
  };
  // The created subtree: documents for every component after the first.
  bson::value created = v;
  for (std::size_t i = loc.to_create.size(); i-- > 1;) {
    created = bson::document{{loc.to_create[i], std::move(created)}};
  }
  const bool into_array = base->is_array();
  if (into_array) {
    const auto index = update_index(first);
    if (!index) return cannot_create();
    auto& items = base->as_array();
    if (*index > items.size() && *index - items.size() > max_padding) {
      return fail("can't backfill more than " + std::to_string(max_padding) + " elements",
                  cannot_backfill_array);
    }
    if (*index < items.size()) {
      items[*index] = std::move(created);
    } else {
      items.resize(*index);  // pads with null
      items.push_back(std::move(created));
    }
  } else if (base->is_document()) {
    base->as_document().append(first, std::move(created));
  } else {
    return cannot_create();
  }
  if (loc.taken.empty() && first.starts_with('$')) {
    return fail("The dollar ($) prefixed field '" + first + "' in '" + first +
                    "' is not allowed in the context of an update's replacement document. "
                    "Consider using an aggregation pipeline with $replaceWith.",
                dollar_prefixed_field_name);
  }
  if (!loc.taken.empty() && loc.taken.front().name == "_id") {
    return fail("Updating the path '" + dotted(loc.taken) + "' to " +
                    element_at_text(loc.taken, *base) + " would modify the immutable field '_id'",
                immutable_field);
  }
  if (logging) {
    runtime_path path = loc.taken;
    for (std::size_t i = 0; i < loc.to_create.size(); ++i) {
      path.push_back({loc.to_create[i], i == 0 && into_array});
    }
    diff_->created(path, loc.taken.size(), std::move(v));
  }
  return {};
}

// RenameNode::apply: a $set of the destination to the source's value, then an $unset of the
// source.
expected<bool> update_applier::apply_rename(const modifier& mod, const location& loc,
                                            bool logging) {
  const auto from = split_path(mod.rename_from());
  // pathsupport::findLongestPrefix over the source path.
  runtime_path source;
  bson::value* current = &root_;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const bool viable =
        current->is_document() || (current->is_array() && update_index(from[i]).has_value());
    if (!viable) {
      return fail("cannot use the part (" + from[i - 1] + " of " + mod.rename_from() +
                      ") to traverse the element ({" + element_text(from[i - 1], *current) + "})",
                  path_not_viable);
    }
    const bool in_array = current->is_array();
    current = child_of(*current, from[i]);
    if (current == nullptr) return false;  // nothing to rename
    source.push_back({from[i], in_array});
  }
  const std::string to = dotted_with(loc.taken, loc.to_create);
  // Renaming through arrays is not allowed, on either side.
  for (std::size_t depth = source.size() - 1; depth-- > 0;) {
    runtime_path ancestor(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(depth) + 1);
    if (resolve(ancestor)->is_array()) {
      return fail("The source field cannot be an array element, '" + mod.rename_from() +
                      "' in doc with " + id_text() + " has an array field called '" +
                      ancestor.back().name + "'",
                  bad_value);
    }
  }
  std::size_t start = loc.to_create.empty() ? loc.taken.size() - 1 : loc.taken.size();
  for (std::size_t depth = start; depth-- > 0;) {
    runtime_path ancestor(loc.taken.begin(),
                          loc.taken.begin() + static_cast<std::ptrdiff_t>(depth) + 1);
    if (resolve(ancestor)->is_array()) {
      return fail("The destination field cannot be an array element, '" + to + "' in doc with " +
                      id_text() + " has an array field called '" + ancestor.back().name + "'",
                  bad_value);
    }
  }
  bson::value moved = *current;
  if (loc.to_create.empty()) {
    *resolve(loc.taken) = moved;
    if (auto s = check_not_immutable(loc.taken); !s) return propagate(s.error());
    if (logging) diff_->updated(loc.taken, std::move(moved));
  } else if (auto s = create(loc, std::move(moved), logging); !s) {
    return propagate(s.error());
  }
  runtime_path parent(source.begin(), source.end() - 1);
  resolve(parent)->as_document().erase(source.back().name);
  if (auto s = check_not_immutable(source); !s) return propagate(s.error());
  if (logging) diff_->deleted(source);
  return true;
}

}  // namespace mongo_emulator::engine
