#include "mapping/recent_kind.h"

#include <algorithm>
#include <optional>

#include "bson/identical.h"
#include "bson/json.h"
#include "common/log.h"
#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/kind_contract.h"
#include "mapping/mapping.h"
#include "mapping/planner.h"
#include "mapping/reference.h"
#include "mapping/spec_reader.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

namespace {

std::string element_path(const mapping& m, const recent_kind& k) {
  return m.into + "." + k.id_field;
}

// Selects the parents whose parent field holds `parent`.
bson::document parent_filter(const recent_kind& k, const bson::value& parent) {
  return bson::document{{k.parent_field, key_match(k.parent_field, parent)}};
}

// Parents are found by _id (one) or by another field (any number).
bool one_parent(const recent_kind& k) {
  return k.parent_field == "_id";
}

write_op recent_op(const mapping& m, bool many, bson::document filter, bson::document update,
                   merge_rule rule, bson::value key) {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  update_write w;
  w.many = many;
  w.filter = std::move(filter);
  w.update = std::move(update);
  op.what = std::move(w);
  op.merge = rule;
  op.merge_key = std::move(key);
  return op;
}

// Takes the element out of the parents matched by `parents`, as the delete policy says.
void remove_element(const mapping& m, const recent_kind& k, const bson::value& id,
                    bson::document parents, std::vector<write_op>& out) {
  if (m.on_source_delete == delete_policy::pull_and_refill) {
    out.push_back(k.refill(m, std::move(parents), merge_rule::mapping_barrier, {}));
    return;
  }
  out.push_back(
      recent_op(m, true, std::move(parents),
                bson::document{
                    {"$pull", bson::document{{m.into, bson::document{{k.id_field, literal(id)}}}}}},
                merge_rule::mapping_barrier, {}));
}

}  // namespace

std::set<std::string> recent_kind::keys(std::string_view object) {
  if (object == "source") return {"parentKey", "filter"};
  if (object == "target") return {};
  return {"idField", "sort", "limit"};
}

const std::vector<std::pair<std::string, delete_policy>>& recent_kind::delete_policies() {
  static const std::vector<std::pair<std::string, delete_policy>> policies = {
      {"pull", delete_policy::pull}, {"pullAndRefill", delete_policy::pull_and_refill}};
  return policies;
}

delete_policy recent_kind::default_delete_policy() {
  return delete_policy::pull_and_refill;
}

void recent_kind::read_source(spec_reader& r, spec_object& source) {
  parent_key = source.path("parentKey", true).value_or("");
  if (const json* f = source.get("filter", false)) filter = read_query(r, *f, "/source/filter");
}

void recent_kind::read_target(spec_reader& /*r*/, spec_object& target) {
  parent_field = target.path("key", false).value_or("_id");
}

void recent_kind::read_rest(spec_reader& r, spec_object& root, const mapping& m) {
  if (auto id = root.string("idField", true)) {
    id_field = *id;
    const auto* f = m.field_named(*id);
    if (f == nullptr) {
      r.error("/idField", "\"" + *id + "\" is not one of the names in \"fields\"");
    } else if (f->computed) {
      r.error("/idField", "\"" + *id +
                              "\" must copy the child's \"_id\", not an expression: the element "
                              "is found by it when the child is deleted");
    } else if (f->source_path != "_id") {
      r.error("/idField", "\"" + *id + "\" must copy the child's \"_id\" (it is \"" +
                              f->source_path +
                              "\"): the element is found by it when the child is deleted");
    }
  }
  if (const json* s = root.sub_object("sort", true)) {
    if (s->empty()) r.error("/sort", "must name at least one field");
    const auto names = field_names(m);
    for (auto it = s->begin(); it != s->end(); ++it) {
      const std::string here = pointer_join("/sort", it.key());
      if (!names.contains(it.key())) {
        r.error(here, "sort field \"" + it.key() + "\" is not one of the names in \"fields\"");
        continue;
      }
      if (const field_map* f = m.field_named(it.key()); f != nullptr && f->computed) {
        r.error(here, "sort field \"" + it.key() +
                          "\" is computed: the newest children are read with a sorted query, "
                          "which sorts by stored fields only");
        continue;
      }
      if (!it->is_number_integer() || (it->get<int>() != 1 && it->get<int>() != -1)) {
        r.error(here, "must be 1 (ascending) or -1 (descending), not " + it->dump());
        continue;
      }
      sort.push_back({it.key(), it->get<int>()});
    }
    // The id breaks ties so the array order is the same however it was built.
    if (!id_field.empty() &&
        std::none_of(sort.begin(), sort.end(), [&](const auto& k) { return k.name == id_field; })) {
      sort.push_back({id_field, 1});
    }
  }
  if (const json* l = root.get("limit", true)) {
    if (!l->is_number_integer() || l->get<long long>() < 1 || l->get<long long>() > 10000) {
      r.error("/limit", "must be a whole number from 1 to 10000, not " + l->dump());
    } else {
      limit = l->get<int>();
    }
  }
  if (!m.into.empty() && query::paths_overlap(m.into, parent_field)) {
    r.error("/into", "\"" + m.into + "\" overlaps the parent key field \"" + parent_field + "\"");
  }
}

void recent_kind::prepare(const mapping& m) {
  sort_paths.clear();
  for (const auto& s : sort) {
    const field_map* f = m.field_named(s.name);
    sort_paths.push_back(f != nullptr ? f->source_path : s.name);
  }
}

std::vector<std::string> recent_kind::written_paths(const mapping& m) const {
  return {m.into};
}

void recent_kind::add_watched_paths(const mapping& /*m*/, std::vector<std::string>& out) const {
  out.push_back(parent_key);
  if (filter) {
    for (const auto& p : filter->paths())
      out.push_back(p);
  }
}

std::vector<std::string> recent_kind::fill_paths() const {
  if (parent_field == "_id") return {};
  return {parent_field};
}

bson::document recent_kind::element(const mapping& m, const bson::document& child) const {
  bson::document out;
  for (const auto& f : m.fields) {
    if (const bson::value* v = child.find_path(f.source_path)) set_path(out, f.name, *v);
  }
  return out;
}

bson::document recent_kind::child_sort(const mapping& /*m*/) const {
  bson::document out;
  for (std::size_t i = 0; i < sort.size(); ++i)
    out.append(sort_paths[i], sort[i].direction);
  return out;
}

write_op recent_kind::refill(const mapping& m, bson::document parents, merge_rule rule,
                             bson::value key) const {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = refill_write{std::move(parents),
                         refill_query{m.source, filter ? filter->filter() : bson::document{},
                                      parent_key, parent_field, child_sort(m), limit}};
  op.merge = rule;
  op.merge_key = std::move(key);
  return op;
}

void recent_kind::push(const mapping& m, bson::value parent, bson::array ids, bson::array elements,
                       std::vector<write_op>& out) const {
  bson::document by;
  for (const auto& s : sort)
    by.append(s.name, s.direction);
  bson::document each;
  each.append("$each", std::move(elements));
  each.append("$sort", std::move(by));
  each.append("$slice", limit);
  bson::document push_spec;
  push_spec.append(m.into, std::move(each));

  update_write w;
  w.many = !one_parent(*this);
  w.filter = parent_filter(*this, parent);
  w.update.append("$push", std::move(push_spec));
  if (ids.size() == 1) {
    w.filter.append(element_path(m, *this), bson::document{{"$ne", ids.front()}});
  } else {
    out.push_back(recent_op(
        m, !one_parent(*this), parent_filter(*this, parent),
        bson::document{
            {"$pull",
             bson::document{{m.into, bson::document{{id_field, bson::document{{"$in", ids}}}}}}}},
        merge_rule::parent_barrier, parent));
  }
  w.push = push_items{parent, std::move(ids)};
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = std::move(w);
  op.merge = merge_rule::push;
  op.merge_key = std::move(parent);
  out.push_back(std::move(op));
}

stream_route recent_kind::route() const {
  return child_route(parent_key, filter);
}

void recent_kind::plan(const mapping& m, const std::vector<std::string>& watched,
                       const change_event& ev, std::vector<write_op>& out,
                       std::vector<std::string>* /*notes*/, const key_share& share) const {
  const bson::value& id = ev.id;
  const std::string ns = ev.source.full();
  if (refused(m, {m.name, "_id", "_id", ns, nullptr}, id, out)) return;
  // Of the parents that may hold it, this partition's own.
  const bson::document contains_id =
      share.narrowed(bson::document{{element_path(m, *this), literal(id)}}, parent_field);

  if (ev.op == operation::delete_) {
    remove_element(m, *this, id, contains_id, out);
    return;
  }
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  if (!ev.full_document) return;  // gone since: its delete event follows
  const bson::document& child = *ev.full_document;

  const bool passes = !filter || filter->matches(child);
  const bson::value* parent = child.find_path(parent_key);
  // A parent key that cannot be a reference: the child belongs nowhere (and is reported).
  const bool has_parent = parent != nullptr && !parent->is_null() &&
                          !refused(m, {m.name, "parentKey", parent_key, ns, &id}, *parent, out);

  if (ev.op == operation::insert) {
    if (!passes || !has_parent || !share.owns(*parent)) return;
    bson::array elements;
    elements.push_back(element(m, child));
    push(m, *parent, bson::array{id}, std::move(elements), out);
    return;
  }

  const bool everything = ev.op == operation::replace;
  const bool parent_touched = everything || touches(ev.touched, {parent_key});
  const bool filter_touched = everything || (filter && touches(ev.touched, filter->paths()));
  const bool sort_touched = everything || touches(ev.touched, sort_paths);

  if (!passes || !has_parent) {
    // No longer belongs anywhere: remove it wherever it is. Unless the change moved it (an
    // event every partition reads), it can only be where its parent key says: that key's
    // partition removes it.
    const bool moved = parent_touched || filter_touched;
    if (moved || share.owns(parent != nullptr ? *parent : bson::value()))
      remove_element(m, *this, id, contains_id, out);
    return;
  }
  if (parent_touched) {
    // Moved: remove it from any other parent that still holds it.
    bson::document others{{element_path(m, *this), literal(id)}};
    others.append(parent_field, bson::document{{"$ne", *parent}});  // $ne is literal too
    remove_element(m, *this, id, share.narrowed(std::move(others), parent_field), out);
  }
  if (!share.owns(*parent)) return;  // its parent is another partition's
  if (sort_touched) {
    // Its position (and whether it is among the newest) may change: rebuild this parent.
    out.push_back(refill(m, parent_filter(*this, *parent), merge_rule::parent_barrier, *parent));
    return;
  }
  bson::document el = element(m, child);
  const bool may_be_new = parent_touched || filter_touched;
  bson::document in_place_filter = parent_filter(*this, *parent);
  in_place_filter.append(element_path(m, *this), literal(id));
  bson::document set;
  set.append(m.into + ".$[" + std::string(array_element_id) + "]",
             may_be_new ? bson::value(el) : bson::value(std::move(el)));
  write_op in_place =
      recent_op(m, !one_parent(*this), std::move(in_place_filter),
                bson::document{{"$set", std::move(set)}}, merge_rule::parent_barrier, *parent);
  std::get<update_write>(in_place.what)
      .array_filters.push_back(
          bson::document{{std::string(array_element_id) + "." + id_field, literal(id)}});
  out.push_back(std::move(in_place));
  if (may_be_new) {
    // It may have just started to belong here.
    bson::array elements;
    elements.push_back(std::move(el));
    push(m, *parent, bson::array{id}, std::move(elements), out);
  }
}

void recent_kind::plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                                  const change_event& ev, std::vector<write_op>& out) const {
  if (ev.op == operation::delete_) return;
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  if (!ev.full_document) return;
  if (refused(m, {m.name, "_id", "_id", ev.source.full(), nullptr}, ev.id, out)) return;
  // A parent that arrived after its children (or was re-keyed): rebuild its array.
  out.push_back(
      refill(m, bson::document{{"_id", literal(ev.id)}}, merge_rule::mapping_barrier, {}));
}

static_assert(mapping_kind<recent_kind>);

void recent_kind::absorb(const mapping& /*m*/, write_op& into, write_op&& later) const {
  auto& ids = std::get<update_write>(into.what).push->ids;
  for (auto& v : std::get<update_write>(later.what).push->ids)
    ids.push_back(std::move(v));
  auto& elements = pushed_elements(into);
  for (auto& e : pushed_elements(later))
    elements.push_back(std::move(e));
}

void recent_kind::finish(const mapping& m, write_op&& op, std::vector<write_op>& out) const {
  auto& w = std::get<update_write>(op.what);
  push(m, std::move(w.push->parent), std::move(w.push->ids), std::move(pushed_elements(op)), out);
}

void recent_kind::explain(const mapping& /*m*/, const write_op& /*op*/,
                          bson::document& /*out*/) const {}

bool recent_kind::complete(const mapping& m, std::span<const write_op* const> ops,
                           document_store& store) const {
  return std::all_of(ops.begin(), ops.end(),
                     [&](const write_op* op) { return complete(m, *op, store); });
}

bool recent_kind::complete(const mapping& m, const write_op& op, document_store& store) const {
  const refill_write& rw = std::get<refill_write>(op.what);
  const refill_query& r = rw.children;
  read_options parent_opts;
  parent_opts.projection = bson::document{{"_id", 1}};
  if (r.parent_field != "_id") parent_opts.projection.append(r.parent_field, 1);
  auto parents = store.find(op.target, rw.parents, parent_opts);
  if (!parents) return false;
  read_options child_opts;
  child_opts.sort = r.sort;
  child_opts.limit = r.limit;
  for (const auto& p : *parents) {
    const bson::value* key = p.find_path(r.parent_field);
    const bson::value* id = p.get("_id");
    if (key == nullptr || id == nullptr) continue;
    if (auto problem = reference_problem(*key)) {
      // No child can name it: leave it alone, as verify does.
      log::warn(
          "writer", "parent not refilled: its key cannot be a reference",
          {{"mapping", m.name},
           {"reason", reference_reason({m.name, "parent key", r.parent_field, op.target.full(), id},
                                       *key, *problem)}});
      continue;
    }
    const bson::document only{{"_id", literal(*id)}};
    // With `recheck`, the children are read again after the write until they are what was
    // written: a push the stream made between the read and the write is then not lost
    // (docs/architecture.md, "Correctness").
    std::optional<bson::array> written;
    while (true) {
      auto children = store.find(r.source, children_filter(r, *key), child_opts);
      if (!children) return false;
      bson::array elements;
      elements.reserve(children->size());
      for (const auto& child : *children)
        elements.push_back(element(m, child));
      if (written && bson::identical(*written, elements)) break;
      bson::document set;
      set.append(m.into, rw.recheck ? elements : std::move(elements));
      bson::document update;
      update.append("$set", std::move(set));
      const store_write w = store.update_one(op, only, update, {});
      if (w == store_write::failed) return false;
      if (!rw.recheck || w == store_write::refused) break;
      written = std::move(elements);
    }
  }
  return true;
}

std::vector<std::string> recent_kind::check(const mapping& m, const bson::document& parent,
                                            const bson::array& expected) const {
  static const bson::array empty;
  const bson::value* have = parent.find_path(m.into);
  if (have != nullptr && !have->is_array()) return {m.into};
  const bson::array& actual = have != nullptr ? have->as_array() : empty;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < std::max(actual.size(), expected.size()); ++i) {
    // As MongoDB's equality has it: numbers by value across types, NaN equal to NaN.
    if (i >= actual.size() || i >= expected.size() || bson::compare(actual[i], expected[i]) != 0) {
      paths.push_back(m.into + "." + std::to_string(i));
    }
  }
  return paths;
}

std::optional<bson::array> recent_kind::held_ids(const mapping& m,
                                                 const bson::document& parent) const {
  const bson::value* have = parent.find_path(m.into);
  if (have == nullptr) return bson::array{};
  if (!have->is_array() || have->as_array().size() > static_cast<std::size_t>(limit))
    return std::nullopt;
  bson::array ids;
  for (const auto& item : have->as_array()) {
    const bson::value* id = item.is_document() ? item.as_document().find_path(id_field) : nullptr;
    // An id no child can have (an array, a regex) is never looked up: it is drift as it is.
    if (id == nullptr || reference_problem(*id)) return std::nullopt;
    const bool twice = std::any_of(ids.begin(), ids.end(), [&](const bson::value& seen) {
      return bson::compare(seen, *id) == 0;
    });
    if (twice) return std::nullopt;
    ids.push_back(*id);
  }
  return ids;
}

void recent_kind::describe(const mapping& m, std::string& s) const {
  std::string by;
  for (const auto& k : sort)
    by += (by.empty() ? "" : ", ") + k.name + ":" + std::to_string(k.direction);
  s += "  keeps " + m.target.full() + "." + m.into + ": the " + std::to_string(limit) +
       " first by {" + by + "} of the children whose " + parent_key + " = parent " + parent_field +
       (filter ? " and matching " + bson::to_json(filter->filter()) : "") + "\n";
  s += "  insert: guarded $push {$each, $sort, $slice: " + std::to_string(limit) + "}\n";
  s += "  update: element $set in place; sort key changed -> refill; moved or filtered out -> " +
       std::string(m.on_source_delete == delete_policy::pull ? "$pull" : "refill") + "\n";
  s += std::string("  delete: ") +
       (m.on_source_delete == delete_policy::pull ? "$pull the element"
                                                  : "refill the parent from the children") +
       "\n";
  if (m.fill_new_targets) s += "  new or re-keyed parents: refilled from the children\n";
}

void recent_kind::indexes(const mapping& m, std::vector<index_need>& out) const {
  bson::document children{{parent_key, 1}};
  for (std::size_t i = 0; i < sort.size(); ++i)
    children.append(sort_paths[i], sort[i].direction);
  out.push_back({m.source, bson::to_json(children), "refill: the newest children of a parent"});
  out.push_back({m.target, bson::to_json(bson::document{{element_path(m, *this), 1}}),
                 "find the parent holding a deleted or moved child"});
  if (parent_field != "_id") {
    out.push_back(
        {m.target, bson::to_json(bson::document{{parent_field, 1}}), "find the parent of a child"});
  }
}

void recent_kind::warnings(const mapping& /*m*/, std::vector<std::string>& /*out*/) const {}

void recent_kind::fingerprint(std::string& s) const {
  // The copy kind's settings at their defaults first: stored fingerprints stay what they were
  // when both kinds shared one flat struct.
  s += "|_id|||";
  s += "|" + parent_key + "|" + parent_field + "|";
  if (filter) s += bson::to_json(filter->filter(), bson::json_mode::canonical);
  for (const auto& k : sort)
    s += "|" + k.name + ":" + std::to_string(k.direction);
  s += "|" + std::to_string(limit);
}

}  // namespace denormd::mapping
