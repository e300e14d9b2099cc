#include "mapping/aggregate_kind.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "bson/identical.h"
#include "bson/json.h"
#include "common/log.h"
#include "mapping/aggregate_detail.h"
#include "mapping/change_event.h"
#include "mapping/computed_expression.h"
#include "mapping/document_store.h"
#include "mapping/kind_contract.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"
#include "mapping/spec_reader.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

using namespace aggregate_detail;

namespace {

constexpr std::pair<std::string_view, accumulator_op> accumulator_names[] = {
    {"$count", accumulator_op::count},
    {"$sum", accumulator_op::sum},
    {"$avg", accumulator_op::avg},
    {"$min", accumulator_op::min},
    {"$max", accumulator_op::max}};

// $group output names cannot hold dots, so the i-th accumulator is "v<i>".
std::string group_field(std::size_t i) {
  return "v" + std::to_string(i);
}

// The expected value of one accumulator from a $group result (nullptr: no matching child);
// nullopt when the field should be absent.
std::optional<bson::value> expected_value(const accumulator& a, std::size_t i,
                                          const bson::document* group) {
  const bson::value* v = group != nullptr ? group->get(group_field(i)) : nullptr;
  if (v != nullptr) return *v;
  if (a.op == accumulator_op::count || a.op == accumulator_op::sum) return bson::value(0);
  return std::nullopt;
}

// Incremental verify: the running values are the same numbers, whatever their type ($inc-like
// sums keep the widest type they have seen), and doubles and decimals may differ by their
// rounding ($inc takes a double into a decimal at 15 digits, $group's $sum at 34).
bool same_number(const bson::value& a, const bson::value& b) {
  if (!a.is_number() || !b.is_number()) return same_value(a, b);
  if (bson::compare(a, b) == 0) return true;
  const auto integral = [](const bson::value& v) {
    return v.kind() == bson::type::int32 || v.kind() == bson::type::int64;
  };
  if (integral(a) && integral(b)) return false;
  const double x = a.to_double();
  const double y = b.to_double();
  return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
}

void read_accumulator(spec_reader& r, const std::string& here, const std::string& name,
                      const json& spec, mapping& m, std::vector<accumulator>& out) {
  if (!spec.is_object() || spec.size() != 1) {
    r.error(here,
            "must be an object with one accumulator ({\"$count\": {}}, {\"$sum\": \"path\"}, "
            "$avg, $min or $max), not " +
                spec.dump());
    return;
  }
  const std::string op_name = spec.begin().key();
  const json& arg = spec.begin().value();
  const auto* it = std::find_if(std::begin(accumulator_names), std::end(accumulator_names),
                                [&](const auto& p) { return p.first == op_name; });
  if (it == std::end(accumulator_names)) {
    r.error(pointer_join(here, op_name),
            "\"" + op_name +
                "\" is not an accumulator of an aggregate mapping (use $count, "
                "$sum, $avg, $min or $max)");
    return;
  }
  accumulator a{name, it->second, "", nullptr};
  if (a.op == accumulator_op::count) {
    if (!arg.is_object() || !arg.empty()) {
      r.error(pointer_join(here, op_name), "must be {}, not " + arg.dump());
      return;
    }
  } else if (arg.is_object()) {
    a.computed = read_computed(r, arg, pointer_join(here, op_name));
    if (!a.computed) return;
    a.path = a.computed->value_path();
  } else {
    if (!arg.is_string()) {
      r.error(pointer_join(here, op_name),
              "must be a child field path (a string) or an expression (an object), not " +
                  json_type(arg));
      return;
    }
    a.path = arg.get<std::string>();
    auto problem = path_problem(a.path);
    if (problem.empty()) problem = reserved_path_problem(a.path);
    if (!problem.empty()) {
      std::string msg = "\"" + a.path + "\" is not a valid field path: it " + problem;
      if (a.path.starts_with('$'))
        msg += " (write the path without '$': \"" + a.path.substr(1) + "\")";
      r.error(pointer_join(here, op_name), msg);
      return;
    }
  }
  m.fields.push_back({name, a.path, a.computed});
  out.push_back(std::move(a));
}

}  // namespace

namespace aggregate_detail {

// The same BSON type and equal by BSON comparison (parent keys, child values).
bool same_value(const bson::value& a, const bson::value& b) {
  return a.kind() == b.kind() && bson::compare(a, b) == 0;
}

// The parent key of a child that counts for some parent: it passes the filter and holds a
// key that can be a reference. With `report`, a key that cannot be one is a dead letter.
std::optional<bson::value> counted_parent(const mapping& m, const aggregate_kind& k,
                                          const change_event& ev, const bson::document& child,
                                          bool report, std::vector<write_op>& out) {
  if (k.filter && !k.filter->matches(child)) return std::nullopt;
  const bson::value* parent = child.find_path(k.parent_key);
  if (parent == nullptr || parent->is_null()) return std::nullopt;
  if (report) {
    const std::string ns = ev.source.full();
    if (refused(m, {m.name, "parentKey", k.parent_key, ns, &ev.id}, *parent, out)) {
      return std::nullopt;
    }
  } else if (reference_problem(*parent)) {
    return std::nullopt;
  }
  return *parent;
}

// Parent keys as MongoDB compares them: 1, 1L and 1.0 name one parent.
void add_key(bson::array& keys, const bson::value& key) {
  const bool seen = std::any_of(keys.begin(), keys.end(),
                                [&](const bson::value& k) { return bson::compare(k, key) == 0; });
  if (!seen) keys.push_back(key);
}

}  // namespace aggregate_detail

group_index::group_index(const std::vector<bson::document>& groups) {
  for (const auto& g : groups) {
    if (const bson::value* id = g.get("_id")) by_key_.emplace(id, &g);
  }
}

const bson::document* group_index::find(const bson::value& key) const {
  auto it = by_key_.find(&key);
  return it == by_key_.end() ? nullptr : it->second;
}

std::string_view accumulator_name(accumulator_op op) {
  for (const auto& [n, o] : accumulator_names) {
    if (o == op) return n;
  }
  return "?";
}

std::set<std::string> aggregate_kind::keys(std::string_view object) {
  if (object == "source") return {"parentKey", "filter"};
  if (object == "target") return {};
  return {"mode"};
}

const std::vector<std::pair<std::string, delete_policy>>& aggregate_kind::delete_policies() {
  static const std::vector<std::pair<std::string, delete_policy>> policies = {
      {"recompute", delete_policy::recompute}};
  return policies;
}

delete_policy aggregate_kind::default_delete_policy() {
  return delete_policy::recompute;
}

void aggregate_kind::read_source(spec_reader& r, spec_object& source) {
  parent_key = source.path("parentKey", true).value_or("");
  if (const json* f = source.get("filter", false)) filter = read_query(r, *f, "/source/filter");
}

void aggregate_kind::read_target(spec_reader& /*r*/, spec_object& target) {
  parent_field = target.path("key", false).value_or("_id");
}

void aggregate_kind::read_fields(spec_reader& r, spec_object& root, mapping& m) {
  denormd::mapping::read_fields(
      r, root, m, [&](const std::string& here, const std::string& field, const json& value) {
        read_accumulator(r, here, field, value, m, accumulators);
      });
}

void aggregate_kind::read_rest(spec_reader& r, spec_object& root, const mapping& m) {
  if (auto mode_name = root.string("mode", false)) {
    if (*mode_name == "recompute") {
      mode = aggregate_mode::recompute;
    } else if (*mode_name == "incremental") {
      mode = aggregate_mode::incremental;
      if (m.into.empty()) {
        r.error("/into",
                "required in incremental mode: each parent keeps the position of the last event "
                "applied to it under \"into\" (e.g. \"into\": \"stats\")");
      }
      if (!m.fill_new_targets) {
        // Deltas build on what a parent holds: one that arrives after its children (or is
        // replaced by the application) must be recomputed when it does, or it stays partial.
        r.error("/fillNewTargets",
                "must be true in incremental mode: a parent inserted after its children, or "
                "replaced by the application, is recomputed only when its collection is watched; "
                "without it the deltas of later children would build on nothing and it would "
                "stay partial for good");
      }
      for (const auto& a : accumulators) {
        if (a.op != accumulator_op::min && a.op != accumulator_op::max) continue;
        r.error(pointer_join("/fields", a.name),
                std::string(accumulator_name(a.op)) +
                    " is not available in incremental mode: when the extreme child leaves, only "
                    "its siblings can tell the next one; use \"mode\": \"recompute\" (or a "
                    "second, recompute mapping for it)");
      }
    } else {
      r.error("/mode", "must be \"recompute\" or \"incremental\", not \"" + *mode_name + "\"");
    }
  }
  for (const auto& p : written_paths(m)) {
    if (query::paths_overlap(p, parent_field)) {
      r.error(
          m.into.empty() ? "/fields" : "/into",
          "the computed path \"" + p + "\" overlaps the parent key field \"" + parent_field + "\"");
      break;
    }
  }
}

void aggregate_kind::prepare(const mapping& m) {
  slots.clear();
  state.clear();
  if (mode != aggregate_mode::incremental) return;
  state = m.into + "._denormd";
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const accumulator& a = accumulators[i];
    switch (a.op) {
      case accumulator_op::count:
        slots.push_back({i, slot_role::count, target_path(m, a.name)});
        break;
      case accumulator_op::sum:
        slots.push_back({i, slot_role::value, target_path(m, a.name)});
        break;
      case accumulator_op::avg:
        slots.push_back({i, slot_role::value, state + ".avg." + a.name + ".sum"});
        slots.push_back({i, slot_role::numeric_count, state + ".avg." + a.name + ".count"});
        // All its children, numbers or not: with some but no number, $group's $avg is null.
        slots.push_back({i, slot_role::count, state + ".avg." + a.name + ".children"});
        break;
      case accumulator_op::min:
      case accumulator_op::max:
        break;  // refused when read
    }
  }
  // After the others: the averages' slots are read as consecutive triples.
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const accumulator& a = accumulators[i];
    if (a.op != accumulator_op::sum && a.op != accumulator_op::avg) continue;
    const std::string types = state + ".types." + a.name + ".";
    slots.push_back({i, slot_role::long_count, types + "long"});
    slots.push_back({i, slot_role::double_count, types + "double"});
    slots.push_back({i, slot_role::decimal_count, types + "decimal"});
  }
}

std::string aggregate_kind::target_path(const mapping& m, std::string_view field) const {
  return m.into.empty() ? std::string(field) : m.into + "." + std::string(field);
}

std::vector<std::string> aggregate_kind::written_paths(const mapping& m) const {
  std::vector<std::string> out;
  for (const auto& a : accumulators)
    out.push_back(target_path(m, a.name));
  return out;
}

void aggregate_kind::add_watched_paths(const mapping& /*m*/, std::vector<std::string>& out) const {
  out.push_back(parent_key);
  if (filter) {
    for (const auto& p : filter->paths())
      out.push_back(p);
  }
}

std::vector<std::string> aggregate_kind::new_target_reads() const {
  if (mode != aggregate_mode::incremental) return {};
  return {position_path()};
}

std::vector<std::string> aggregate_kind::fill_paths() const {
  if (parent_field == "_id") return {};
  return {parent_field};
}

write_op aggregate_kind::recompute(const mapping& m, bson::array keys) const {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  bson::document parents;
  if (!keys.empty()) parents.append(parent_field, keys_match(parent_field, keys));
  op.what = recompute_write{std::move(parents), std::move(keys), false};
  op.merge = merge_rule::recompute;
  return op;
}

const value_slot* aggregate_kind::slot_of(std::size_t i, slot_role role) const {
  const auto it = std::find_if(slots.begin(), slots.end(), [&](const value_slot& s) {
    return s.accumulator == i && s.role == role;
  });
  return it != slots.end() ? &*it : nullptr;
}

write_op aggregate_kind::recompute_selected(const mapping& m, bson::document parents,
                                            bool recheck) const {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = recompute_write{std::move(parents), {}, recheck};
  return op;
}

namespace aggregate_detail {

// Without a child's state before (or, in incremental mode, right after) a change, the parent
// it left (or joined) is unknown: every parent is recomputed.
void recompute_every_parent(const mapping& m, const aggregate_kind& k, const change_event& ev,
                            std::string_view image, std::string_view what,
                            std::vector<write_op>& out, std::vector<std::string>* notes) {
  if (notes != nullptr) {
    notes->push_back("mapping \"" + m.name + "\": " + ev.op_name + " of " + ev.source.full() + " " +
                     describe_value(ev.id, 100) + " has no " + std::string(image) + ", so " +
                     std::string(what) + " is unknown; every parent is recomputed");
  }
  out.push_back(k.recompute(m, {}));
}

}  // namespace aggregate_detail

stream_route aggregate_kind::route() const {
  return child_route(parent_key, filter);
}

void aggregate_kind::plan(const mapping& m, const std::vector<std::string>& watched,
                          const change_event& ev, std::vector<write_op>& out,
                          std::vector<std::string>* notes, const key_share& share) const {
  const std::size_t first = out.size();
  if (mode == aggregate_mode::incremental) {
    plan_deltas(m, *this, watched, ev, out, notes);
  } else {
    plan_recompute(m, watched, ev, out, notes);
  }
  if (!share.every_key()) keep_own(m, share, out, first);
}

void aggregate_kind::keep_own(const mapping& m, const key_share& share, std::vector<write_op>& out,
                              std::size_t first) const {
  std::vector<write_op> kept;
  for (std::size_t i = first; i < out.size(); ++i) {
    write_op& op = out[i];
    if (const auto* u = op.as<update_write>(); u != nullptr && u->delta) {
      if (share.owns(u->delta->parent)) kept.push_back(std::move(op));
    } else if (auto* r = op.as<recompute_write>(); r != nullptr && r->keys.empty()) {
      // Every parent, or those a filter selects: this partition's own.
      kept.push_back(
          recompute_selected(m, share.narrowed(std::move(r->parents), parent_field), r->recheck));
    } else if (r != nullptr) {
      bson::array mine;
      for (auto& k : r->keys) {
        if (share.owns(k)) mine.push_back(std::move(k));
      }
      if (mine.empty()) continue;
      kept.push_back(op.merge == merge_rule::retype ? retype(m, std::move(mine))
                                                    : recompute(m, std::move(mine)));
    } else {
      kept.push_back(std::move(op));  // a dead letter: the planner keeps it in one partition
    }
  }
  out.resize(first);
  for (auto& op : kept)
    out.push_back(std::move(op));
}

void aggregate_kind::plan_recompute(const mapping& m, const std::vector<std::string>& watched,
                                    const change_event& ev, std::vector<write_op>& out,
                                    std::vector<std::string>* notes) const {
  const bson::document* before =
      ev.full_document_before_change ? &*ev.full_document_before_change : nullptr;
  auto every_parent = [&](const char* what) {
    recompute_every_parent(m, *this, ev, "fullDocumentBeforeChange", what, out, notes);
  };
  if (ev.op == operation::delete_) {
    if (before == nullptr) return every_parent("the parent it left");
    if (auto p = counted_parent(m, *this, ev, *before, false, out)) {
      out.push_back(recompute(m, bson::array{*p}));
    }
    return;
  }
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  bson::array keys;
  if (ev.full_document) {
    if (auto p = counted_parent(m, *this, ev, *ev.full_document, true, out)) keys.push_back(*p);
  }
  if (ev.op != operation::insert) {
    // The parent it counted for before: a new parent key or filter result may have moved it,
    // and a child gone since (no fullDocument) still counts where it was.
    const bool everything = ev.op == operation::replace;
    const bool moved = everything || touches(ev.touched, {parent_key}) ||
                       (filter && touches(ev.touched, filter->paths()));
    if (before != nullptr) {
      if (auto p = counted_parent(m, *this, ev, *before, false, out)) add_key(keys, *p);
    } else if (moved) {
      return every_parent("the parent it may have left");
    }
  }
  if (!keys.empty()) out.push_back(recompute(m, std::move(keys)));
}

void aggregate_kind::plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                                     const change_event& ev, std::vector<write_op>& out) const {
  if (ev.op == operation::delete_) return;
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  if (!ev.full_document) return;
  // MongoDB logs an update that changes much of a small document as a replacement, so our
  // own writes come back as replace events. Each of them moves the parent's position forward
  // (a delta to its last new event, a recompute to its snapshot; one that applies nothing
  // changes nothing and logs nothing), and nothing else does: an application that writes
  // back a parent it read carries the position it read, at most the one the parent held.
  // So a replacement is ours exactly when its position is after the one before it; any
  // other (or one whose pre-image is gone) is recomputed, whatever it carries.
  if (mode == aggregate_mode::incremental && ev.op == operation::replace &&
      ev.full_document_before_change) {
    const bson::value* was = ev.full_document_before_change->find_path(position_path());
    const bson::value* now = ev.full_document->find_path(position_path());
    if (was != nullptr && now != nullptr && bson::compare(*was, *now) < 0) return;
  }
  if (refused(m, {m.name, "_id", "_id", ev.source.full(), nullptr}, ev.id, out)) return;
  // A parent that arrived after its children (or was re-keyed): compute its values.
  out.push_back(recompute_selected(m, bson::document{{"_id", literal(ev.id)}}, false));
}

namespace {

// A $group accumulator counting the children for which `condition` holds.
bson::document count_where(bson::document condition) {
  return bson::document{
      {"$sum", bson::document{{"$cond", bson::array{std::move(condition), 1, 0}}}}};
}

}  // namespace

bson::document aggregate_kind::children_match(const bson::array& keys) const {
  bson::document match;
  if (!keys.empty()) match.append(parent_key, keys_match(parent_key, keys));
  if (filter) match = with_filter(std::move(match), filter->filter());
  return match;
}

namespace {

// An accumulator's argument `expression` with its value left out ($$REMOVE, which every
// accumulator ignores) for the children of `failing` on which it failed, while they are as
// they were then; `$cond` evaluates only the branch it takes, so the failing expression is
// never evaluated for them.
bson::value leaving_out(const computed_expression& expression,
                        std::span<const failing_child> failing) {
  bson::array which;
  for (const auto& f : failing) {
    if (f.expression == expression.key()) which.push_back(f.unchanged);
  }
  if (which.empty()) return expression.as_bson();
  bson::value any =
      which.size() == 1 ? which.front() : bson::value(bson::document{{"$or", std::move(which)}});
  return bson::document{{"$cond", bson::array{std::move(any), "$$REMOVE", expression.as_bson()}}};
}

}  // namespace

std::string failing_child::reason(const mapping& m) const {
  const bson::value* id = input.get("_id");
  return "the child " + (id != nullptr ? bson::to_json(*id) : std::string("?")) +
         " of the parent " + bson::to_json(parent_key) + " is left out of " + m.name +
         "'s values: an accumulator's expression fails on it: " + error;
}

bson::array aggregate_kind::pipeline(const bson::array& keys,
                                     std::span<const failing_child> failing) const {
  bson::document match = children_match(keys);
  bson::document group{{"_id", "$" + parent_key}};
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const auto& a = accumulators[i];
    // {$sum: 1} is $count on every server version ($count as an accumulator is 5.0+).
    const bson::value arg = a.op == accumulator_op::count ? bson::value(1)
                            : a.computed ? (failing.empty() ? bson::value(a.computed->as_bson())
                                                            : leaving_out(*a.computed, failing))
                                         : bson::value("$" + a.path);
    const std::string_view op = a.op == accumulator_op::count ? "$sum" : accumulator_name(a.op);
    group.append(group_field(i), bson::document{{std::string(op), arg}});
    if (mode == aggregate_mode::incremental && a.op == accumulator_op::avg) {
      // The running sum and count an incremental average is kept as.
      const bson::array numeric{"int", "long", "double", "decimal"};
      group.append("s" + std::to_string(i), bson::document{{"$sum", arg}});
      group.append("c" + std::to_string(i), bson::document{{"$sum", 1}});
      group.append("n" + std::to_string(i),
                   count_where(bson::document{
                       {"$in", bson::array{bson::document{{"$type", arg}}, numeric}}}));
    }
    if (mode == aggregate_mode::incremental &&
        (a.op == accumulator_op::sum || a.op == accumulator_op::avg)) {
      // The children by the types that decide the type of the sum (slot_role::long_count...).
      for (const auto& [part, type] :
           {std::pair<const char*, const char*>{"l", "long"}, {"f", "double"}, {"d", "decimal"}}) {
        group.append(part + std::to_string(i),
                     count_where(bson::document{
                         {"$eq", bson::array{bson::document{{"$type", arg}}, type}}}));
      }
    }
  }
  return bson::array{bson::document{{"$match", std::move(match)}},
                     bson::document{{"$group", std::move(group)}}};
}

bson::document aggregate_kind::update_for(const mapping& m, const bson::document* group) const {
  bson::document set;
  bson::document unset;
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const std::string path = target_path(m, accumulators[i].name);
    if (auto v = expected_value(accumulators[i], i, group)) {
      set.append(path, std::move(*v));
    } else {
      unset.append(path, "");
    }
  }
  bson::document update;
  if (!set.empty()) update.append("$set", std::move(set));
  if (!unset.empty()) update.append("$unset", std::move(unset));
  return update;
}

namespace {

// The target paths of a parent whose values are not `same` as what `group` says.
template <class Same>
std::vector<std::string> differing_paths(const mapping& m, const aggregate_kind& k,
                                         const bson::document& parent, const bson::document* group,
                                         Same same) {
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < k.accumulators.size(); ++i) {
    std::string path = k.target_path(m, k.accumulators[i].name);
    const auto want = expected_value(k.accumulators[i], i, group);
    const bson::value* have = parent.find_path(path);
    if (!(want ? have != nullptr && same(*have, *want) : have == nullptr))
      paths.push_back(std::move(path));
  }
  return paths;
}

// A recompute writes each parent whose values are not identical to the server's $group
// result (its types included; NaN equals NaN, so a NaN average is not rewritten for ever).
bool holds(const mapping& m, const aggregate_kind& k, const bson::document& parent,
           const bson::document* group) {
  return differing_paths(
             m, k, parent, group,
             [](const bson::value& a, const bson::value& b) { return bson::identical(a, b); })
      .empty();
}

}  // namespace

std::vector<std::string> aggregate_kind::check(const mapping& m, const bson::document& parent,
                                               const bson::document* group) const {
  // Verify compares as MongoDB's equality does: numbers by value across types, NaN equal to
  // NaN; incremental running values may also differ by their rounding.
  if (mode == aggregate_mode::incremental)
    return differing_paths(m, *this, parent, group, same_number);
  return differing_paths(m, *this, parent, group, [](const bson::value& a, const bson::value& b) {
    return bson::compare(a, b) == 0;
  });
}

namespace aggregate_detail {

// The parents that can have children, with their keys.
std::vector<parent_ref> recomputable(const mapping& m, const aggregate_kind& k, const write_op& op,
                                     std::span<const bson::document> parents) {
  std::vector<parent_ref> out;
  for (const bson::document& p : parents) {
    const bson::value* key = p.find_path(k.parent_field);
    if (key == nullptr || key->is_null() || p.get("_id") == nullptr) continue;
    if (auto problem = reference_problem(*key)) {
      // No child can name it: leave it alone, as verify does.
      log::warn("writer", "parent not recomputed: its key cannot be a reference",
                {{"mapping", m.name},
                 {"reason", reference_reason({m.name, "parent key", k.parent_field,
                                              op.target.full(), p.get("_id")},
                                             *key, *problem)}});
      continue;
    }
    out.emplace_back(&p, key);
  }
  return out;
}

}  // namespace aggregate_detail

static_assert(mapping_kind<aggregate_kind>);

namespace {

// `keys` with each parent key once, by MongoDB equality, in the order of first appearance.
bson::array distinct_keys(bson::array keys) {
  std::set<bson::value, bson::value_less> seen;
  bson::array out;
  for (auto& k : keys) {
    if (seen.insert(k).second) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

void aggregate_kind::absorb(const mapping& /*m*/, write_op& into, write_op&& other) const {
  if (into.merge == merge_rule::delta) {
    auto& events = std::get<update_write>(into.what).delta->events;
    for (auto& e : std::get<update_write>(other.what).delta->events)
      events.push_back(std::move(e));
    return;
  }
  auto& keys = std::get<recompute_write>(into.what).keys;
  auto& more = std::get<recompute_write>(other.what).keys;
  if (into.merge == merge_rule::retype) {
    // A type check merges into the last one, after the earlier's parents.
    more.insert(more.end(), std::make_move_iterator(keys.begin()),
                std::make_move_iterator(keys.end()));
    keys = std::move(more);
    return;
  }
  // No keys: every parent, which the union stays.
  if (keys.empty()) return;
  if (more.empty()) {
    keys.clear();
    return;
  }
  keys.insert(keys.end(), std::make_move_iterator(more.begin()),
              std::make_move_iterator(more.end()));
}

void aggregate_kind::finish(const mapping& m, write_op&& op, std::vector<write_op>& out) const {
  switch (op.merge) {
    case merge_rule::delta:
      out.push_back(deltas(m, std::move(*std::get<update_write>(op.what).delta)));
      return;
    case merge_rule::recompute:
      out.push_back(
          recompute(m, distinct_keys(std::move(std::get<recompute_write>(op.what).keys))));
      return;
    case merge_rule::retype:
      out.push_back(retype(m, distinct_keys(std::move(std::get<recompute_write>(op.what).keys))));
      return;
    default:
      out.push_back(std::move(op));
      return;
  }
}

void aggregate_kind::explain(const mapping& m, const write_op& op, bson::document& out) const {
  const auto* w = op.as<recompute_write>();
  if (w == nullptr) return;
  // Selected parents: the keys come from the parents found.
  if (w->keys.empty() && !w->parents.empty()) {
    out.append("source", bson::document{{"ns", m.source.full()},
                                        {"parentKey", parent_key},
                                        {"parentField", parent_field}});
  } else {
    out.append("source", bson::document{{"ns", m.source.full()}, {"pipeline", pipeline(w->keys)}});
  }
}

bool aggregate_kind::complete(const mapping& m, std::span<const write_op* const> ops,
                              document_store& store) const {
  return std::all_of(ops.begin(), ops.end(),
                     [&](const write_op* op) { return complete(m, *op, store); });
}

bool aggregate_kind::complete(const mapping& m, const write_op& op, document_store& store) const {
  if (mode == aggregate_mode::incremental) return complete_incremental(m, op, store);
  const recompute_write& rw = std::get<recompute_write>(op.what);
  read_options parent_opts;
  parent_opts.projection = bson::document{{"_id", 1}};
  if (parent_field != "_id") parent_opts.projection.append(parent_field, 1);
  for (const auto& p : written_paths(m))
    parent_opts.projection.append(p, 1);
  return for_each_parent_chunk(op, store, parent_opts, [&](std::span<const bson::document> page) {
    const std::vector<parent_ref> chunk_parents = recomputable(m, *this, op, page);
    if (chunk_parents.empty()) return true;
    if (recompute_parents(m, op, rw.recheck, chunk_parents, store)) return true;
    if (!store.refusal()) return false;
    // A child on which a computed argument fails makes $group refuse every parent it was read
    // for: the children that fail are found, each a dead letter, and their values left out
    // (as the stream's own evaluation leaves such a value absent).
    bson::array keys;
    for (const auto& [p, key] : chunk_parents)
      add_key(keys, *key);
    std::vector<failing_child> failing;
    for (int round = 0; round < max_failing_rounds; ++round) {
      if (!find_failing(m, op, keys, store, failing)) break;
      if (recompute_parents(m, op, rw.recheck, chunk_parents, store, failing)) return true;
      if (!store.refusal()) return false;
    }
    if (!store.refusal()) return false;
    // They could not all be found (more than the bound, or failing only together): each parent
    // alone, so only theirs are left out, as dead letters.
    for (const parent_ref& p : chunk_parents) {
      if (recompute_parents(m, op, rw.recheck, std::span(&p, 1), store)) continue;
      const auto refusal = store.refusal();
      if (!refusal) return false;
      if (!store.dead_letter(
              op, "the parent with " + parent_field + " " + bson::to_json(*p.second) +
                      " was not recomputed: the server refused its children: " + *refusal)) {
        return false;
      }
    }
    return true;
  });
}

bool aggregate_kind::find_failing(const mapping& m, const write_op& op, const bson::array& keys,
                                  document_store& store, std::vector<failing_child>& failing) {
  if (failing.size() >= max_failing_children) return false;
  const auto& k = std::get<aggregate_kind>(m.kind);
  auto found = store.failing_children(op, k.children_match(keys), k.parent_key,
                                      max_failing_children - failing.size());
  if (!found || found->empty()) return false;
  for (auto& f : *found) {
    const bool known = std::any_of(failing.begin(), failing.end(), [&](const failing_child& g) {
      return g.expression == f.expression && bson::identical(g.input, f.input);
    });
    if (known) continue;
    if (!store.dead_letter(op, f.reason(m))) return false;
    failing.push_back(std::move(f));
  }
  return true;
}

bool aggregate_kind::recompute_parents(const mapping& m, const write_op& op, bool recheck,
                                       std::span<const parent_ref> chunk_parents,
                                       document_store& store,
                                       std::span<const failing_child> failing) const {
  bson::array keys;
  for (const auto& [p, key] : chunk_parents)
    add_key(keys, *key);
  // What each parent holds now, as a group result (nullptr: none yet known; compare the
  // parent document itself). With `recheck` the children are aggregated again after the
  // writes until nothing changes: a child the stream recomputed between our read and our
  // write is then not lost (docs/architecture.md, "Correctness").
  std::vector<std::optional<bson::document>> held(chunk_parents.size());
  bool first = true;
  while (true) {
    auto groups = store.aggregate(m.source, pipeline(keys, failing));
    if (!groups) return false;
    const group_index by_key(*groups);
    // The chunk's parents whose values differ, written in one round trip.
    std::vector<document_store::single_update> updates;
    for (std::size_t i = 0; i < chunk_parents.size(); ++i) {
      const auto [parent, key] = chunk_parents[i];
      const bson::document* group = by_key.find(*key);
      const bson::document empty;
      const bool current = first ? holds(m, *this, *parent, group)
                                 : held[i] && bson::identical(*held[i], group ? *group : empty);
      if (!current) {
        updates.push_back({bson::document{{"_id", literal(*parent->get("_id"))}},
                           update_for(m, group),
                           {},
                           nullptr});
      }
      held[i] = group ? *group : empty;
    }
    first = false;
    if (updates.empty()) return true;
    const auto written = store.update_each(op, updates);
    if (!written) return false;
    const bool wrote =
        std::find(written->begin(), written->end(), store_write::applied) != written->end();
    if (!recheck || !wrote) return true;
  }
}

void aggregate_kind::describe(const mapping& m, std::string& s) const {
  std::string values;
  for (const auto& a : accumulators) {
    values += (values.empty() ? "" : ", ") + target_path(m, a.name) + " = " +
              std::string(accumulator_name(a.op)) + "(" +
              (a.computed ? a.computed->canonical_text() : a.path) + ")";
  }
  s += "  computes on " + m.target.full() + ": " + values + "\n";
  s += "  over the children in " + m.source.full() + " whose " + parent_key + " = parent " +
       parent_field + (filter ? " and matching " + bson::to_json(filter->filter()) : "") + "\n";
  if (mode == aggregate_mode::incremental) {
    s += "  incremental: each change of a child adds its difference to its parents (old and new) "
         "with one pipeline update per parent and batch, skipping the events the parent has "
         "seen (its position in " +
         position_path() + ")\n";
    s += "  no matching child: $count and $sum are 0; $avg is removed (null when no child has a "
         "number)\n";
    s += "  needs fullDocumentBeforeChange and fullDocument as of each change on " +
         m.source.full() + " (changeStreamPreAndPostImages)\n";
  } else {
    s += "  any change of a child: recompute its parents (old and new) with one aggregation per "
         "batch ($match, $group)\n";
    s += "  no matching child: $count and $sum are 0; $avg, $min and $max are removed\n";
    s += "  needs fullDocumentBeforeChange on " + m.source.full() +
         " (changeStreamPreAndPostImages) to find the parent a deleted or moved child left\n";
  }
  if (m.fill_new_targets) s += "  new or re-keyed parents: computed from the children\n";
}

void aggregate_kind::indexes(const mapping& m, std::vector<index_need>& out) const {
  out.push_back({m.source, bson::to_json(bson::document{{parent_key, 1}}),
                 "recompute: the children of a parent"});
  if (parent_field != "_id") {
    out.push_back(
        {m.target, bson::to_json(bson::document{{parent_field, 1}}), "find the parent of a child"});
  }
}

void aggregate_kind::warnings(const mapping& m, std::vector<std::string>& out) const {
  if (!m.fill_new_targets) {
    out.push_back(
        "a parent inserted after its children holds no computed values until one of "
        "its children changes (or a backfill runs); set \"fillNewTargets\": true to "
        "compute them when the parent appears");
  }
}

void aggregate_kind::fingerprint(std::string& s) const {
  s += "|" + parent_key + "|" + parent_field + "|";
  if (filter) s += bson::to_json(filter->filter(), bson::json_mode::canonical);
  for (const auto& a : accumulators)
    s += "|" + a.name + ":" + std::string(accumulator_name(a.op)) + ":" +
         (a.computed ? "expr:" + a.computed->canonical_text() : a.path);
  s += mode == aggregate_mode::recompute ? "|recompute" : "|incremental";
}

}  // namespace denormd::mapping
