#include "mapping/planner.h"

#include <algorithm>

namespace denormd::mapping {

namespace {

// {key: value} merged with the mapping's where clause; $and only when they share a field.
bson::document with_where(bson::document filter, const std::optional<query::matcher>& where) {
  if (!where) return filter;
  bool clash = false;
  for (const auto& f : where->filter())
    clash = clash || filter.contains(f.name);
  if (clash) return bson::document{{"$and", bson::array{filter, where->filter()}}};
  for (const auto& f : where->filter())
    filter.append(f.name, f.val);
  return filter;
}

std::string element_path(const mapping& m) {
  return m.into + "." + m.id_field;
}

write_kind parent_write_kind(const mapping& m) {
  return m.parent_field == "_id" ? write_kind::update_one : write_kind::update_many;
}

write_op recent_op(const mapping& m, write_kind kind, bson::document filter, merge_rule rule,
                   bson::value key) {
  write_op op;
  op.source_mapping = &m;
  op.kind = kind;
  op.target = m.target;
  op.filter = std::move(filter);
  op.merge = rule;
  op.merge_key = std::move(key);
  return op;
}

// Takes the element out of the parents matched by `parents`, as the delete policy says.
void remove_element(const mapping& m, const bson::value& id, bson::document parents,
                    std::vector<write_op>& out) {
  if (m.on_source_delete == delete_policy::pull_and_refill) {
    out.push_back(make_refill(m, std::move(parents), merge_rule::mapping_barrier, {}));
    return;
  }
  write_op op =
      recent_op(m, write_kind::update_many, std::move(parents), merge_rule::mapping_barrier, {});
  op.update = bson::document{{"$pull", bson::document{{m.into, bson::document{{m.id_field, id}}}}}};
  out.push_back(std::move(op));
}

// {$set: present fields, $unset: missing ones} at the given target paths.
bson::document build_copy_update(const mapping& m, const std::vector<std::string>& target_paths,
                                 const bson::document* source) {
  bson::document set;
  bson::document unset;
  for (std::size_t i = 0; i < m.fields.size(); ++i) {
    const bson::value* v = source != nullptr ? source->find_path(m.fields[i].source_path) : nullptr;
    if (v != nullptr) {
      set.append(target_paths[i], *v);
    } else {
      unset.append(target_paths[i], "");
    }
  }
  bson::document update;
  if (!set.empty()) update.append("$set", std::move(set));
  if (!unset.empty()) update.append("$unset", std::move(unset));
  return update;
}

}  // namespace

write_op make_refill(const mapping& m, bson::document parents, merge_rule rule, bson::value key) {
  write_op op;
  op.source_mapping = &m;
  op.kind = write_kind::refill;
  op.target = m.target;
  op.filter = std::move(parents);
  op.merge = rule;
  op.merge_key = std::move(key);
  op.refill = refill_query{m.source,
                           m.filter ? m.filter->filter() : bson::document{},
                           m.parent_key,
                           m.parent_field,
                           planner::child_sort(m),
                           m.limit};
  return op;
}

void set_path(bson::document& doc, std::string_view dotted, bson::value v) {
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) {
    doc.set(dotted, std::move(v));
    return;
  }
  bson::value* child = doc.get(dotted.substr(0, dot));
  if (child == nullptr || !child->is_document()) {
    child = &doc.set(dotted.substr(0, dot), bson::document{});
  }
  set_path(child->as_document(), dotted.substr(dot + 1), std::move(v));
}

planner::planner(std::vector<mapping> mappings) : mappings_(std::move(mappings)) {
  auto add_field = [](source_plan& plan, const std::string& path) {
    const std::string top = path.substr(0, path.find('.'));
    if (std::find(plan.fields.begin(), plan.fields.end(), top) == plan.fields.end()) {
      plan.fields.push_back(top);
    }
  };
  for (const auto& m : mappings_) {
    compiled c{&m, m.watched_paths(), {m.parent_key}, {}, {}};
    for (const auto& s : m.sort)
      c.sort_paths.push_back(m.field_named(s.name)->source_path);
    for (const auto& f : m.fields)
      c.target_paths.push_back(m.target_path(f));
    auto& plan = by_source_[m.source];
    add_field(plan, "_id");
    for (const auto& p : c.watched)
      add_field(plan, p);
    if (m.kind == mapping_kind::copy) add_field(plan, m.source_key);
    plan.mappings.push_back(std::move(c));
    if (!m.fill_new_targets) continue;

    // As a watched target: what a new or re-keyed dependent is made of.
    compiled t{&m, {}, {}, {}, {}};
    if (m.kind == mapping_kind::copy) {
      t.watched.push_back(m.target_array.empty() ? m.target_key : m.target_array);
      if (m.where) {
        for (const auto& p : m.where->paths())
          t.watched.push_back(p);
      }
    } else if (m.parent_field != "_id") {
      t.watched.push_back(m.parent_field);
    }
    auto& target_plan = by_source_[m.target];
    add_field(target_plan, "_id");
    for (const auto& p : t.watched)
      add_field(target_plan, p);
    target_plan.fills.push_back(std::move(t));
  }
}

std::vector<ns> planner::source_namespaces() const {
  std::vector<ns> out;
  for (const auto& [n, plan] : by_source_) {
    if (!plan.mappings.empty()) out.push_back(n);
  }
  return out;
}

std::vector<ns> planner::watched_namespaces() const {
  std::vector<ns> out;
  for (const auto& [n, plan] : by_source_)
    out.push_back(n);
  return out;
}

const std::vector<std::string>& planner::document_fields(const ns& source) const {
  static const std::vector<std::string> none;
  auto it = by_source_.find(source);
  return it == by_source_.end() ? none : it->second.fields;
}

bson::document planner::make_element(const mapping& m, const bson::document& child) {
  bson::document element;
  for (const auto& f : m.fields) {
    if (const bson::value* v = child.find_path(f.source_path)) set_path(element, f.name, *v);
  }
  return element;
}

bson::document planner::child_sort(const mapping& m) {
  bson::document sort;
  for (const auto& s : m.sort)
    sort.append(m.field_named(s.name)->source_path, s.direction);
  return sort;
}

void planner::plan(const change_event& ev, std::vector<write_op>& out,
                   std::vector<std::string>* notes) const {
  if (!ev.is_document_event()) return;
  auto it = by_source_.find(ev.source);
  if (it == by_source_.end()) return;
  for (const compiled& c : it->second.mappings) {
    if (c.m->kind == mapping_kind::copy) {
      plan_copy(c, ev, out, notes);
    } else {
      plan_recent(c, ev, out);
    }
  }
  for (const compiled& c : it->second.fills)
    plan_fill(c, ev, out);
}

void planner::plan_copy(const compiled& c, const change_event& ev, std::vector<write_op>& out,
                        std::vector<std::string>* notes) const {
  const mapping& m = *c.m;
  if (ev.op == operation::update && !touches(ev.touched, c.watched)) return;
  if (ev.op == operation::delete_ && m.on_source_delete == delete_policy::keep) return;
  // An update whose document is already gone: the delete event that follows handles it.
  if (ev.op != operation::delete_ && !ev.full_document) return;

  const bson::value* key = &ev.id;
  if (m.source_key != "_id") {
    const auto& doc =
        ev.op == operation::delete_ ? ev.full_document_before_change : ev.full_document;
    key = doc ? doc->find_path(m.source_key) : nullptr;
    if (key == nullptr) {
      if (notes != nullptr && ev.op == operation::delete_) {
        notes->push_back(m.name + ": a delete of " + ev.source.full() + " carries no \"" +
                         m.source_key +
                         "\"; enable pre-images (changeStreamPreAndPostImages) "
                         "so onSourceDelete can find the targets");
      }
      return;
    }
  }

  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.kind = m.target_array.empty() && m.target_key == "_id" ? write_kind::update_one
                                                            : write_kind::update_many;
  op.merge = merge_rule::last_wins;
  op.merge_key = *key;
  if (m.target_array.empty()) {
    op.filter = with_where(bson::document{{m.target_key, *key}}, m.where);
  } else {
    op.filter = with_where(bson::document{{m.target_array + "." + m.target_key, *key}}, m.where);
    op.array_filters.push_back(
        bson::document{{std::string(array_element_id) + "." + m.target_key, *key}});
  }

  op.update = build_copy_update(m, c.target_paths,
                                ev.op == operation::delete_ ? nullptr : &*ev.full_document);
  out.push_back(std::move(op));
}

bson::document planner::copy_update(const mapping& m, const bson::document* source) {
  std::vector<std::string> paths;
  for (const auto& f : m.fields)
    paths.push_back(m.target_path(f));
  return build_copy_update(m, paths, source);
}

void planner::plan_fill(const compiled& c, const change_event& ev,
                        std::vector<write_op>& out) const {
  const mapping& m = *c.m;
  if (ev.op == operation::delete_) return;
  if (ev.op == operation::update && !touches(ev.touched, c.watched)) return;
  if (!ev.full_document) return;
  const bson::document& target = *ev.full_document;

  if (m.kind == mapping_kind::recent) {
    // A parent that arrived after its children (or was re-keyed): rebuild its array.
    out.push_back(make_refill(m, bson::document{{"_id", ev.id}}, merge_rule::mapping_barrier, {}));
    return;
  }
  if (m.where && !m.where->matches(target)) return;  // e.g. a delivered order keeps its snapshot
  auto fill_one = [&](const bson::value& key, bson::array array_filters) {
    write_op op;
    op.source_mapping = &m;
    op.kind = write_kind::fill;
    op.target = m.target;
    op.filter = with_where(bson::document{{"_id", ev.id}}, m.where);
    op.array_filters = std::move(array_filters);
    op.fill = fill_query{m.source, m.source_key, key};
    out.push_back(std::move(op));
  };
  if (m.target_array.empty()) {
    const bson::value* key = target.find_path(m.target_key);
    if (key != nullptr && !key->is_null()) fill_one(*key, {});
    return;
  }
  const bson::value* items = target.find_path(m.target_array);
  if (items == nullptr || !items->is_array()) return;
  bson::array seen;
  for (const auto& item : items->as_array()) {
    const bson::value* key =
        item.is_document() ? item.as_document().find_path(m.target_key) : nullptr;
    if (key == nullptr || key->is_null() ||
        std::find(seen.begin(), seen.end(), *key) != seen.end()) {
      continue;
    }
    seen.push_back(*key);
    fill_one(*key, bson::array{
                       bson::document{{std::string(array_element_id) + "." + m.target_key, *key}}});
  }
}

void planner::plan_recent(const compiled& c, const change_event& ev,
                          std::vector<write_op>& out) const {
  const mapping& m = *c.m;
  const bson::value& id = ev.id;
  const bson::document contains_id{{element_path(m), id}};

  if (ev.op == operation::delete_) {
    remove_element(m, id, contains_id, out);
    return;
  }
  if (ev.op == operation::update && !touches(ev.touched, c.watched)) return;
  if (!ev.full_document) return;  // gone since: its delete event follows
  const bson::document& child = *ev.full_document;

  const bool passes = !m.filter || m.filter->matches(child);
  const bson::value* parent = child.find_path(m.parent_key);
  const bool has_parent = parent != nullptr && !parent->is_null();

  if (ev.op == operation::insert) {
    if (!passes || !has_parent) return;
    bson::array elements;
    elements.push_back(make_element(m, child));
    append_push_ops(m, *parent, bson::array{id}, std::move(elements), out);
    return;
  }

  const bool everything = ev.op == operation::replace;
  const bool parent_touched = everything || touches(ev.touched, c.parent);
  const bool filter_touched = everything || (m.filter && touches(ev.touched, m.filter->paths()));
  const bool sort_touched = everything || touches(ev.touched, c.sort_paths);

  if (!passes || !has_parent) {
    // No longer belongs anywhere: remove it wherever it is.
    remove_element(m, id, contains_id, out);
    return;
  }
  if (parent_touched) {
    // Moved: remove it from any other parent that still holds it.
    bson::document others = contains_id;
    others.append(m.parent_field, bson::document{{"$ne", *parent}});
    remove_element(m, id, std::move(others), out);
  }
  if (sort_touched) {
    // Its position (and whether it is among the newest) may change: rebuild this parent.
    out.push_back(make_refill(m, bson::document{{m.parent_field, *parent}},
                              merge_rule::parent_barrier, *parent));
    return;
  }
  bson::document element = make_element(m, child);
  const bool may_be_new = parent_touched || filter_touched;
  write_op in_place = recent_op(m, parent_write_kind(m),
                                bson::document{{m.parent_field, *parent}, {element_path(m), id}},
                                merge_rule::parent_barrier, *parent);
  bson::document set;
  set.append(m.into + ".$[" + std::string(array_element_id) + "]",
             may_be_new ? bson::value(element) : bson::value(std::move(element)));
  in_place.update.append("$set", std::move(set));
  in_place.array_filters.push_back(
      bson::document{{std::string(array_element_id) + "." + m.id_field, id}});
  out.push_back(std::move(in_place));
  if (may_be_new) {
    // It may have just started to belong here.
    bson::array elements;
    elements.push_back(std::move(element));
    append_push_ops(m, *parent, bson::array{id}, std::move(elements), out);
  }
}

void append_push_ops(const mapping& m, bson::value parent, bson::array ids, bson::array elements,
                     std::vector<write_op>& out) {
  bson::document sort;
  for (const auto& s : m.sort)
    sort.append(s.name, s.direction);
  bson::document each;
  each.append("$each", std::move(elements));
  each.append("$sort", std::move(sort));
  each.append("$slice", m.limit);
  bson::document push_spec;
  push_spec.append(m.into, std::move(each));

  write_op push = recent_op(m, parent_write_kind(m), bson::document{{m.parent_field, parent}},
                            merge_rule::push, parent);
  push.update.append("$push", std::move(push_spec));
  if (ids.size() == 1) {
    push.filter.append(element_path(m), bson::document{{"$ne", ids.front()}});
  } else {
    write_op pull = recent_op(m, parent_write_kind(m), bson::document{{m.parent_field, parent}},
                              merge_rule::parent_barrier, parent);
    pull.update = bson::document{
        {"$pull",
         bson::document{{m.into, bson::document{{m.id_field, bson::document{{"$in", ids}}}}}}}};
    out.push_back(std::move(pull));
  }
  push.push = push_items{std::move(parent), std::move(ids)};
  out.push_back(std::move(push));
}

bson::array& pushed_elements(write_op& push) {
  auto& spec = push.update.get("$push")->as_document().fields().front().val.as_document();
  return spec.get("$each")->as_array();
}

}  // namespace denormd::mapping
