#include "mapping/aggregate_kind.h"

#include <algorithm>

#include "bson/json.h"
#include "common/log.h"
#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"
#include "mapping/spec_reader.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

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

// The same BSON type and equal by BSON comparison: NaN equals NaN here, so a parent whose
// average is NaN is not rewritten (or rechecked) for ever.
bool same_value(const bson::value& a, const bson::value& b) {
  return a.kind() == b.kind() && bson::compare(a, b) == 0;
}

bool same_group(const bson::document& a, const bson::document& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& fa = a.fields()[i];
    const auto& fb = b.fields()[i];
    if (fa.name != fb.name || !same_value(fa.val, fb.val)) return false;
  }
  return true;
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

void add_key(bson::array& keys, const bson::value& key) {
  const bool seen = std::any_of(keys.begin(), keys.end(),
                                [&](const bson::value& k) { return same_value(k, key); });
  if (!seen) keys.push_back(key);
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
  accumulator a{name, it->second, ""};
  if (a.op == accumulator_op::count) {
    if (!arg.is_object() || !arg.empty()) {
      r.error(pointer_join(here, op_name), "must be {}, not " + arg.dump());
      return;
    }
  } else {
    if (!arg.is_string()) {
      r.error(pointer_join(here, op_name),
              "must be a child field path (a string), not " + json_type(arg));
      return;
    }
    a.path = arg.get<std::string>();
    if (auto problem = path_problem(a.path); !problem.empty()) {
      std::string msg = "\"" + a.path + "\" is not a valid field path: it " + problem;
      if (a.path.starts_with('$'))
        msg += " (write the path without '$': \"" + a.path.substr(1) + "\")";
      r.error(pointer_join(here, op_name), msg);
      return;
    }
  }
  m.fields.push_back({name, a.path});
  out.push_back(std::move(a));
}

}  // namespace

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
      r.error("/mode",
              "\"incremental\" is not available in this version of denormd; use \"recompute\" "
              "(docs/architecture.md, \"The aggregate kind\")");
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

void aggregate_kind::prepare(const mapping& /*m*/) {}

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

write_op aggregate_kind::recompute_selected(const mapping& m, bson::document parents,
                                            bool recheck) const {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = recompute_write{std::move(parents), {}, recheck};
  return op;
}

void aggregate_kind::plan(const mapping& m, const std::vector<std::string>& watched,
                          const change_event& ev, std::vector<write_op>& out,
                          std::vector<std::string>* notes) const {
  const bson::document* before =
      ev.full_document_before_change ? &*ev.full_document_before_change : nullptr;
  auto every_parent = [&](const char* what) {
    // Without the child's earlier state the parent it left is unknown: recompute them all.
    if (notes != nullptr) {
      notes->push_back("mapping \"" + m.name + "\": " + ev.op_name + " of " + ev.source.full() +
                       " " + describe_value(ev.id, 100) + " has no fullDocumentBeforeChange, so " +
                       what + " is unknown; every parent is recomputed");
    }
    out.push_back(recompute(m, {}));
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
  if (refused(m, {m.name, "_id", "_id", ev.source.full(), nullptr}, ev.id, out)) return;
  // A parent that arrived after its children (or was re-keyed): compute its values.
  out.push_back(recompute_selected(m, bson::document{{"_id", literal(ev.id)}}, false));
}

bson::array aggregate_kind::pipeline(const bson::array& keys) const {
  bson::document match;
  if (!keys.empty()) match.append(parent_key, keys_match(parent_key, keys));
  if (filter) match = with_filter(std::move(match), filter->filter());
  bson::document group{{"_id", "$" + parent_key}};
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    const auto& a = accumulators[i];
    // {$sum: 1} is $count on every server version ($count as an accumulator is 5.0+).
    const bson::value arg =
        a.op == accumulator_op::count ? bson::value(1) : bson::value("$" + a.path);
    const std::string_view op = a.op == accumulator_op::count ? "$sum" : accumulator_name(a.op);
    group.append(group_field(i), bson::document{{std::string(op), arg}});
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

std::vector<std::string> aggregate_kind::check(const mapping& m, const bson::document& parent,
                                               const bson::document* group) const {
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < accumulators.size(); ++i) {
    std::string path = target_path(m, accumulators[i].name);
    const auto want = expected_value(accumulators[i], i, group);
    const bson::value* have = parent.find_path(path);
    const bool same = !want ? have == nullptr : have != nullptr && same_value(*have, *want);
    if (!same) paths.push_back(std::move(path));
  }
  return paths;
}

bool aggregate_kind::complete(const mapping& m, const write_op& op, document_store& store) const {
  const recompute_write& rw = std::get<recompute_write>(op.what);
  read_options parent_opts;
  parent_opts.projection = bson::document{{"_id", 1}};
  if (parent_field != "_id") parent_opts.projection.append(parent_field, 1);
  for (const auto& p : written_paths(m))
    parent_opts.projection.append(p, 1);
  auto parents = store.find(op.target, rw.parents, parent_opts);
  if (!parents) return false;

  for (std::size_t start = 0; start < parents->size(); start += chunk) {
    const std::size_t end = std::min(parents->size(), start + chunk);
    // The parents of this chunk that can have children, with their keys.
    std::vector<std::pair<const bson::document*, const bson::value*>> chunk_parents;
    bson::array keys;
    for (std::size_t i = start; i < end; ++i) {
      const bson::document& p = (*parents)[i];
      const bson::value* key = p.find_path(parent_field);
      if (key == nullptr || key->is_null() || p.get("_id") == nullptr) continue;
      if (auto problem = reference_problem(*key)) {
        // No child can name it: leave it alone, as verify does.
        log::warn("writer", "parent not recomputed: its key cannot be a reference",
                  {{"mapping", m.name},
                   {"reason", reference_reason({m.name, "parent key", parent_field,
                                                op.target.full(), p.get("_id")},
                                               *key, *problem)}});
        continue;
      }
      chunk_parents.emplace_back(&p, key);
      add_key(keys, *key);
    }
    if (chunk_parents.empty()) continue;
    // What each parent holds now, as a group result (nullptr: none yet known; compare the
    // parent document itself). With `recheck` the children are aggregated again after the
    // writes until nothing changes: a child the stream recomputed between our read and our
    // write is then not lost (docs/architecture.md, "Correctness").
    std::vector<std::optional<bson::document>> holds(chunk_parents.size());
    bool first = true;
    while (true) {
      auto groups = store.aggregate(m.source, pipeline(keys));
      if (!groups) return false;
      const group_index by_key(*groups);
      // The chunk's parents whose values differ, written in one round trip.
      std::vector<document_store::single_update> updates;
      for (std::size_t i = 0; i < chunk_parents.size(); ++i) {
        const auto [parent, key] = chunk_parents[i];
        const bson::document* group = by_key.find(*key);
        const bson::document empty;
        const bool current = first ? check(m, *parent, group).empty()
                                   : holds[i] && same_group(*holds[i], group ? *group : empty);
        if (!current) {
          updates.push_back(
              {bson::document{{"_id", literal(*parent->get("_id"))}}, update_for(m, group)});
        }
        holds[i] = group ? *group : empty;
      }
      first = false;
      if (updates.empty()) break;
      const auto written = store.update_each(op, updates);
      if (!written) return false;
      const bool wrote =
          std::find(written->begin(), written->end(), store_write::applied) != written->end();
      if (!rw.recheck || !wrote) break;
    }
  }
  return true;
}

void aggregate_kind::describe(const mapping& m, std::string& s) const {
  std::string values;
  for (const auto& a : accumulators) {
    values += (values.empty() ? "" : ", ") + target_path(m, a.name) + " = " +
              std::string(accumulator_name(a.op)) + "(" + (a.path.empty() ? "" : a.path) + ")";
  }
  s += "  computes on " + m.target.full() + ": " + values + "\n";
  s += "  over the children in " + m.source.full() + " whose " + parent_key + " = parent " +
       parent_field + (filter ? " and matching " + bson::to_json(filter->filter()) : "") + "\n";
  s += "  any change of a child: recompute its parents (old and new) with one aggregation per "
       "batch ($match, $group)\n";
  s += "  no matching child: $count and $sum are 0; $avg, $min and $max are removed\n";
  s += "  needs fullDocumentBeforeChange on " + m.source.full() +
       " (changeStreamPreAndPostImages) to find the parent a deleted or moved child left\n";
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
    s += "|" + a.name + ":" + std::string(accumulator_name(a.op)) + ":" + a.path;
  s += mode == aggregate_mode::recompute ? "|recompute" : "|incremental";
}

}  // namespace denormd::mapping
