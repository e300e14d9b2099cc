#include "mapping/planner.h"

#include <algorithm>
#include <cstdint>

#include "query/path.h"

namespace denormd::mapping {

bool replay_gate::admits(std::string_view name, std::string_view position) const {
  const auto it = from.find(name);
  return position > (it == from.end() ? std::string_view(others_after) : it->second);
}

bool replay_gate::passed(std::string_view position) const {
  if (position <= others_after) return false;
  return std::all_of(from.begin(), from.end(),
                     [&](const auto& f) { return position > std::string_view(f.second); });
}

planner::planner(std::vector<mapping> mappings, std::map<ns, int> partitions)
    : mappings_(std::move(mappings)), partitions_(std::move(partitions)) {
  auto add_field = [](source_plan& plan, const std::string& path) {
    if (path == whole_document_path) {
      plan.whole = true;
      return;
    }
    const std::string top = path.substr(0, path.find('.'));
    if (std::find(plan.fields.begin(), plan.fields.end(), top) == plan.fields.end()) {
      plan.fields.push_back(top);
    }
  };
  for (auto& m : mappings_) {
    std::visit([&](auto& k) { k.prepare(m); }, m.kind);
    compiled c{&m, m.watched_paths(), m.visit([](const auto& k) { return k.route(); })};
    auto& plan = by_source_[m.source];
    add_field(plan, "_id");
    for (const auto& p : c.watched)
      add_field(plan, p);
    for (const auto& p : m.visit([](const auto& k) { return k.key_paths(); }))
      add_field(plan, p);
    plan.mappings.push_back(std::move(c));
    if (!m.fill_new_targets) continue;

    // As a watched target: what a new or re-keyed dependent is made of.
    // A new target's fill writes that target alone: routed by its _id.
    compiled t{&m, m.visit([](const auto& k) { return k.fill_paths(); }), {"_id", false, {}}};
    auto& target_plan = by_source_[m.target];
    add_field(target_plan, "_id");
    for (const auto& p : t.watched)
      add_field(target_plan, p);
    for (const auto& p : m.visit([](const auto& k) { return k.new_target_reads(); }))
      add_field(target_plan, p);
    target_plan.fills.push_back(std::move(t));
  }
  for (auto& [n, plan] : by_source_) {
    std::vector<const mapping*> sources;
    for (const compiled& c : plan.mappings)
      sources.push_back(c.m);
    auto fields = std::make_shared<const computed_fields>(sources);
    if (!fields->empty()) plan.computed = std::move(fields);
  }
}

std::map<ns, planner::source_plan>::const_iterator planner::plan_of(const ns& source) const {
  // A partition reads what its namespace reads; a whole namespace (every event's) is looked up
  // as it is, without a copy.
  return source.part.whole() ? by_source_.find(source) : by_source_.find(source.collection());
}

bool planner::reads_whole_document(const ns& source) const {
  auto it = plan_of(source);
  return it != by_source_.end() && it->second.whole;
}

const computed_fields* planner::computed(const ns& source) const {
  auto it = plan_of(source);
  return it == by_source_.end() ? nullptr : it->second.computed.get();
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
  for (const auto& [n, plan] : by_source_) {
    const auto parts = partitions_.find(n);
    if (parts == partitions_.end()) {
      out.push_back(n);
      continue;
    }
    for (int i = 0; i < parts->second; ++i)
      out.push_back(ns{n.db, n.coll, partition{i, parts->second}});
  }
  return out;
}

const std::vector<std::string>& planner::document_fields(const ns& source) const {
  static const std::vector<std::string> none;
  auto it = plan_of(source);
  return it == by_source_.end() ? none : it->second.fields;
}

stream_images planner::needs_images(const ns& source) const {
  stream_images out;
  auto it = plan_of(source);
  if (it == by_source_.end()) return out;
  auto add = [&](const stream_images& need) {
    out.before = out.before || need.before;
    out.after = out.after || need.after;
  };
  for (const compiled& c : it->second.mappings)
    add(c.m->visit([](const auto& k) { return k.needs_images(); }));
  for (const compiled& c : it->second.fills)
    add(c.m->visit([](const auto& k) { return k.target_needs_images(); }));
  return out;
}

std::string planner::stream_signature(const ns& source) const {
  auto it = plan_of(source);
  if (it == by_source_.end()) return {};
  std::vector<std::string> parts;
  for (const compiled& c : it->second.mappings)
    parts.push_back("source " + c.m->name + " " + c.m->fingerprint());
  for (const compiled& c : it->second.fills)
    parts.push_back("fills " + c.m->name + " " + c.m->fingerprint());
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts)
    out += p + "\n";
  return out;
}

namespace {

bson::document expr(const char* op, bson::value arg) {
  return bson::document{{op, std::move(arg)}};
}

bson::document map_expr(bson::value input, const char* as, bson::value in) {
  return expr("$map",
              bson::document{{"input", std::move(input)}, {"as", as}, {"in", std::move(in)}});
}

// Whether the string `c` is an array index as query::parse_index reads one: 1 to 9 digits,
// no leading zero but "0" itself. The first test (only digits, or empty) settles every field
// name that is not a number at once: the server runs this for each component of each changed
// path of every update event, so it must be cheap (an earlier form, a $map over the nine
// positions, made the stream filter four times as costly for the server).
bson::document is_index(const char* c) {
  const bson::document length = expr("$strLenCP", c);
  return expr(
      "$and",
      bson::array{
          expr("$eq", bson::array{expr("$ltrim",
                                       bson::document{{"input", c},
                                                      {"chars", expr("$literal", "0123456789")}}),
                                  expr("$literal", "")}),
          expr("$gte", bson::array{length, std::int32_t{1}}),
          expr("$lte", bson::array{length, std::int32_t{9}}),
          expr("$or",
               bson::array{expr("$eq", bson::array{length, std::int32_t{1}}),
                           expr("$ne", bson::array{expr("$substrCP", bson::array{c, std::int32_t{0},
                                                                                 std::int32_t{1}}),
                                                   expr("$literal", "0")})}),
      });
}

// Whether `parts` (an array of a changed path's components, array indexes left out) and
// `path` overlap as touches() has it: one a prefix of the other, component by component.
bson::document overlaps(const char* parts, const std::string& path) {
  bson::array same;
  std::int32_t k = 0;
  for (const std::string_view w : query::field_components(path)) {
    same.push_back(
        expr("$or", bson::array{expr("$lte", bson::array{expr("$size", parts), k}),
                                expr("$eq", bson::array{expr("$arrayElemAt", bson::array{parts, k}),
                                                        expr("$literal", std::string(w))})}));
    ++k;
  }
  return expr("$and", std::move(same));
}

// True when an update event touches any of `paths`: the updated, removed and truncated fields,
// as change_event reads them, each split at its dots and without its array indexes, against
// each path (touches()).
bson::document update_touches(const std::vector<std::string>& paths) {
  auto or_empty = [](const char* field, bson::value empty) {
    return expr("$ifNull", bson::array{field, std::move(empty)});
  };
  const bson::document fields = expr(
      "$concatArrays",
      bson::array{
          map_expr(expr("$objectToArray",
                        or_empty("$updateDescription.updatedFields", bson::document{})),
                   "u", "$$u.k"),
          or_empty("$updateDescription.removedFields", bson::array{}),
          map_expr(or_empty("$updateDescription.truncatedArrays", bson::array{}), "t", "$$t.field"),
      });
  const bson::document parts =
      expr("$filter",
           bson::document{{"input", expr("$split", bson::array{"$$f", expr("$literal", ".")})},
                          {"as", "c"},
                          {"cond", expr("$not", bson::array{is_index("$$c")})}});
  bson::array any;
  for (const auto& p : paths)
    any.push_back(overlaps("$$p", p));
  return expr(
      "$anyElementTrue",
      bson::array{map_expr(fields, "f",
                           expr("$let", bson::document{{"vars", bson::document{{"p", parts}}},
                                                       {"in", expr("$or", std::move(any))}}))});
}

}  // namespace

bson::array planner::stream_filter(const ns& source) const {
  auto it = plan_of(source);
  if (it == by_source_.end()) return {};
  std::vector<std::string> paths;
  auto add = [&](const std::vector<compiled>& list) {
    for (const compiled& c : list) {
      for (const auto& p : c.watched) {
        if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
      }
    }
  };
  add(it->second.mappings);
  add(it->second.fills);
  std::sort(paths.begin(), paths.end());
  // A computed field reading the whole document watches every path: no update is skipped.
  if (it->second.whole) paths.clear();
  // Every kind skips an update that touches none of its watched paths, and a fill skips a
  // delete (the dependent is gone); every other event, whatever its type, passes.
  bson::array skipped{"update"};
  if (it->second.mappings.empty()) skipped.push_back("delete");
  bson::array kept{bson::document{{"operationType", bson::document{{"$nin", std::move(skipped)}}}}};
  if (it->second.whole) {
    kept.push_back(bson::document{{"operationType", "update"}});
  } else if (!paths.empty()) {
    kept.push_back(bson::document{{"operationType", "update"}, {"$expr", update_touches(paths)}});
  }
  bson::array stages{bson::document{{"$match", bson::document{{"$or", std::move(kept)}}}}};
  if (!source.part.whole()) {
    bson::document mine = partition_match(source);
    if (!mine.empty()) stages.push_back(bson::document{{"$match", std::move(mine)}});
  }
  return stages;
}

int planner::partitions_of(const ns& source) const {
  const auto it = partitions_.find(source.collection());
  return it == partitions_.end() ? 0 : it->second;
}

bson::document planner::partition_match(const ns& source) const {
  const auto it = plan_of(source);
  if (it == by_source_.end()) return {};
  const partition& share = source.part;
  bson::array any;
  auto add = [&any](bson::document condition) {
    if (std::find(any.begin(), any.end(), bson::value(condition)) == any.end())
      any.push_back(std::move(condition));
  };
  // Whatever is not a change of one document (drop, rename, invalidate) reaches every stream.
  add(bson::document{
      {"operationType",
       bson::document{{"$nin", bson::array{"insert", "update", "replace", "delete"}}}}});
  std::vector<stream_route> routes;
  for (const compiled& c : it->second.mappings)
    routes.push_back(c.route);
  for (const compiled& c : it->second.fills)
    routes.push_back(c.route);
  for (const stream_route& r : routes) {
    const auto key = route_expr(r.key_path);
    if (!key) return {};  // a route the server cannot compute: every event
    add(bson::document{{"$expr", owns_expr(share, *key)}});
    if (r.everywhere_on_delete) {
      add(bson::document{
          {"operationType", bson::document{{"$in", bson::array{"delete", "replace"}}}}});
      // A document gone since its update: where it counted is as unknown as for a delete.
      add(bson::document{{"operationType", "update"}, {"fullDocument", bson::value()}});
    }
    if (!r.moving_paths.empty()) {
      add(bson::document{{"operationType", "update"}, {"$expr", update_touches(r.moving_paths)}});
    }
  }
  return bson::document{{"$or", std::move(any)}};
}

namespace {

// `$<field>` kept as it is unless it is a document, which keeps only `names`: a null (a
// lookup that found nothing) stays null and a missing one stays missing.
bson::document trimmed(const std::string& field, const std::vector<std::string>& names) {
  const std::string whole = "$" + field;
  bson::document kept;
  for (const auto& n : names)
    kept.append(n, whole + "." + n);
  bson::document is_document{
      {"$eq", bson::array{bson::document{{"$type", whole}}, std::string("object")}}};
  return bson::document{{"$cond", bson::array{std::move(is_document), std::move(kept), whole}}};
}

}  // namespace

bson::array planner::stream_projection(const ns& source) const {
  auto it = plan_of(source);
  if (it == by_source_.end()) return {};
  if (it->second.whole) return {};
  const auto& names = it->second.fields;
  // Top-level names from the mappings' paths, which the loader allows; one an expression
  // could not carry keeps the documents whole rather than read as an operator.
  for (const auto& n : names) {
    if (n.empty() || n.front() == '$') return {};
  }
  bson::document set{{"fullDocument", trimmed("fullDocument", names)}};
  if (needs_images(source).before) {
    set.append("fullDocumentBeforeChange", trimmed("fullDocumentBeforeChange", names));
  }
  return bson::array{bson::document{{"$set", std::move(set)}}};
}

std::vector<std::string> planner::mappings_reading(const ns& source) const {
  std::vector<std::string> out;
  auto it = plan_of(source);
  if (it == by_source_.end()) return out;
  for (const compiled& c : it->second.mappings)
    out.push_back(c.m->name);
  for (const compiled& c : it->second.fills) {
    if (std::find(out.begin(), out.end(), c.m->name) == out.end()) out.push_back(c.m->name);
  }
  return out;
}

void planner::plan(const change_event& ev, std::vector<write_op>& out,
                   std::vector<std::string>* notes, const replay_gate* gate, const partition& mine,
                   const handover* from) const {
  if (!ev.is_document_event()) return;
  auto it = plan_of(ev.source);
  if (it == by_source_.end()) return;
  std::string position;
  if (gate != nullptr || from != nullptr) position = token_position(ev.token);
  const key_share share(mine, from, position);
  auto admitted = [&](const compiled& c) {
    return gate == nullptr || gate->admits(c.m->name, position);
  };
  for (const compiled& c : it->second.mappings) {
    if (!admitted(c)) continue;
    const std::size_t first = out.size();
    c.m->visit([&](const auto& k) { k.plan(*c.m, c.watched, ev, out, notes, share); });
    if (share.every_key()) {
      if (out.size() > first && !ev.computed_failures.empty()) dead_letter_failures(*c.m, ev, out);
      continue;
    }
    keep_dead_letters_once(c, ev, out, first, share);
  }
  for (const compiled& c : it->second.fills) {
    if (admitted(c) && share.owns(ev.id))
      c.m->visit([&](const auto& k) { k.plan_new_target(*c.m, c.watched, ev, out); });
  }
}

void planner::keep_dead_letters_once(const compiled& c, const change_event& ev,
                                     std::vector<write_op>& out, std::size_t first,
                                     const key_share& share) const {
  // Every partition an event reaches may plan a dead letter about it; one keeps them: the
  // partition of the value the event is routed by (docs/architecture.md, "Partitioned streams").
  const bool is_delete = ev.op == operation::delete_;
  const bson::value route =
      route_value(ev.id, ev.full_document ? &*ev.full_document : nullptr,
                  ev.full_document_before_change ? &*ev.full_document_before_change : nullptr,
                  is_delete, c.route.key_path);
  if (share.owns(route)) {
    if (ev.computed_failures.empty()) return;
    // As for a whole namespace: when the mapping plans anything for the event at all.
    std::vector<write_op> whole;
    c.m->visit([&](const auto& k) { k.plan(*c.m, c.watched, ev, whole, nullptr, key_share{}); });
    if (!whole.empty()) dead_letter_failures(*c.m, ev, out);
    return;
  }
  out.erase(
      std::remove_if(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                     [](const write_op& op) { return op.as<dead_letter_write>() != nullptr; }),
      out.end());
}

void planner::dead_letter_failures(const mapping& m, const change_event& ev,
                                   std::vector<write_op>& out) const {
  const computed_fields* fields = computed(ev.source);
  if (fields == nullptr) return;
  for (const auto& failure : ev.computed_failures) {
    const computed_fields::entry* e = fields->find(failure.key);
    if (e == nullptr) continue;
    for (const auto& o : e->owners) {
      if (o.m == &m)
        out.push_back(dead_letter_op(m, computed_fields::failure_reason(o.field, ev.id, failure),
                                     dead_letter_subject{ev.source.full(), ev.id, o.field}));
    }
  }
}

bson::array& pushed_elements(write_op& push) {
  auto& update = std::get<update_write>(push.what).update;
  auto& spec = update.get("$push")->as_document().fields().front().val.as_document();
  return spec.get("$each")->as_array();
}

}  // namespace denormd::mapping
