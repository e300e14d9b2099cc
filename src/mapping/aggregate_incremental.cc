// The aggregate kind's incremental mode (docs/architecture.md, "The aggregate kind"): each
// event is a delta to its parents' running values, applied by a pipeline update that skips
// the events a parent has seen; completions recompute from a snapshot. The recompute mode and
// what both share are in aggregate_kind.cc.
#include <algorithm>
#include <cmath>
#include <span>

#include "bson/identical.h"
#include "bson/json.h"
#include "common/log.h"
#include "mapping/aggregate_detail.h"
#include "mapping/aggregate_kind.h"
#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

using namespace aggregate_detail;

namespace {

// The type a type-count slot counts.
bson::type counted_type(slot_role role) {
  switch (role) {
    case slot_role::long_count:
      return bson::type::int64;
    case slot_role::double_count:
      return bson::type::double_;
    default:
      return bson::type::decimal128;
  }
}

bool counts_types(slot_role role) {
  return role == slot_role::long_count || role == slot_role::double_count ||
         role == slot_role::decimal_count;
}

// Incremental mode: what one counted child adds to each running value (nullopt: nothing).
struct child_share {
  bson::value parent;
  std::vector<std::optional<bson::value>> values;  // by slot
};

std::optional<child_share> share_of(const mapping& m, const aggregate_kind& k,
                                    const change_event& ev, const bson::document& child,
                                    bool report, std::vector<write_op>& out) {
  auto parent = counted_parent(m, k, ev, child, report, out);
  if (!parent) return std::nullopt;
  child_share s{std::move(*parent), {}};
  for (const auto& slot : k.slots) {
    const accumulator& a = k.accumulators[slot.accumulator];
    const bson::value* v = a.path.empty() ? nullptr : child.find_path(a.path);
    const bool number = v != nullptr && v->is_number();
    switch (slot.role) {
      case slot_role::count:
        s.values.emplace_back(bson::value(std::int32_t{1}));
        break;
      case slot_role::value:
        s.values.push_back(number ? std::optional<bson::value>(*v) : std::nullopt);
        break;
      case slot_role::numeric_count:
        s.values.push_back(number ? std::optional<bson::value>(std::int32_t{1}) : std::nullopt);
        break;
      case slot_role::long_count:
      case slot_role::double_count:
      case slot_role::decimal_count: {
        const bool counted = v != nullptr && v->kind() == counted_type(slot.role);
        s.values.push_back(counted ? std::optional<bson::value>(std::int32_t{1}) : std::nullopt);
        break;
      }
    }
  }
  return s;
}

// Whether a running sum can take `v` in and out again: not NaN, not infinite (as a double or
// a decimal).
bool finite_number(const bson::value& v) {
  if (v.is<double>()) return std::isfinite(v.as<double>());
  if (v.is<bson::decimal128>()) {
    const std::string text = v.as<bson::decimal128>().to_string();
    return text.find("NaN") == std::string::npos && text.find("Inf") == std::string::npos;
  }
  return true;
}

bool kept_by_deltas(const child_share& s) {
  return std::all_of(s.values.begin(), s.values.end(),
                     [](const auto& v) { return !v || finite_number(*v); });
}

// The position of an event in its stream, as a parent keeps it: the cluster time, then the
// resume token's _data, which MongoDB encodes so that tokens compare in event order (events of
// one transaction share a cluster time).
bson::document position_of(const change_event& ev) {
  return bson::document{{"t", ev.cluster_time}, {"k", token_position(ev.token)}};
}

// The position of a snapshot read at `at`: after every event at or before that time.
bson::document position_of(bson::timestamp at) {
  return bson::document{{"t", at}, {"k", bson::max_key{}}};
}

constexpr std::string_view index_field = "__denormd_i";

// Builders that move their parts: a statement holds a term per event and value, and nested
// initializer lists would copy each subtree once per level.
bson::document one(std::string name, bson::value v) {
  bson::document d;
  d.append(std::move(name), std::move(v));
  return d;
}

template <class... V>
bson::array list(V&&... v) {
  bson::array a;
  a.reserve(sizeof...(v));
  (a.emplace_back(std::forward<V>(v)), ...);
  return a;
}

// Incremental mode: the change to each parent's running values, as one delta per parent.
// Without the state before or after a change that needs it, its parents are recomputed (from a
// snapshot, so the deltas before and after it still apply exactly once).
// An event without the image a delta needs (no pre-image, or a post-image lost to a later
// delete): the parent the known side names is recomputed, or every parent when the other side
// may have named another.
void plan_without_image(const mapping& m, const aggregate_kind& k, const change_event& ev,
                        const bson::document* before, const bson::document* after,
                        std::vector<write_op>& out, std::vector<std::string>* notes) {
  // The side that is known names a parent to recompute; the other may have named another
  // unless the change left the parent key and the filter alone.
  const bool moved = ev.op != operation::update || touches(ev.touched, {k.parent_key}) ||
                     (k.filter && touches(ev.touched, k.filter->paths()));
  if (moved) {
    return recompute_every_parent(
        m, k, ev, before == nullptr ? "fullDocumentBeforeChange" : "fullDocument (post-image)",
        before == nullptr ? "the parent it left" : "the parent it joined", out, notes);
  }
  const bson::document* known = before != nullptr ? before : after;
  if (known == nullptr) {
    return recompute_every_parent(m, k, ev, "fullDocumentBeforeChange", "its parent", out, notes);
  }
  if (auto p = counted_parent(m, k, ev, *known, known == after, out)) {
    out.push_back(k.recompute(m, bson::array{*p}));
  }
}

}  // namespace

namespace aggregate_detail {

void plan_deltas(const mapping& m, const aggregate_kind& k, const std::vector<std::string>& watched,
                 const change_event& ev, std::vector<write_op>& out,
                 std::vector<std::string>* notes) {
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  const bson::document* before =
      ev.full_document_before_change ? &*ev.full_document_before_change : nullptr;
  const bson::document* after =
      ev.op != operation::delete_ && ev.full_document ? &*ev.full_document : nullptr;
  const bool needs_before = ev.op != operation::insert;
  const bool needs_after = ev.op != operation::delete_;
  if ((needs_before && before == nullptr) || (needs_after && after == nullptr))
    return plan_without_image(m, k, ev, before, after, out, notes);
  auto was = before != nullptr ? share_of(m, k, ev, *before, false, out) : std::nullopt;
  auto now = after != nullptr ? share_of(m, k, ev, *after, true, out) : std::nullopt;
  if ((was && !kept_by_deltas(*was)) || (now && !kept_by_deltas(*now))) {
    // A NaN or an infinity in a running sum cannot be taken out again (NaN - NaN is NaN):
    // the parents this child leaves and joins are recomputed from a snapshot instead, which
    // also keeps the deltas before and after this event exactly once.
    bson::array keys;
    if (was) add_key(keys, was->parent);
    if (now) add_key(keys, now->parent);
    out.push_back(k.recompute(m, std::move(keys)));
    return;
  }
  const bson::document at = position_of(ev);
  // A double or a decimal taken out of a running sum may have been its last: the sum then
  // keeps a type (and its rounding) that $group would no longer give. Such parents are
  // checked after the batch's deltas and recomputed where no child of that type is left.
  bson::array retype_keys;
  auto emit = [&](const bson::value& parent, std::vector<delta_term> terms) {
    if (terms.empty()) return;
    const bool inexact_out = std::any_of(terms.begin(), terms.end(), [&](const delta_term& t) {
      return t.subtract && k.slots[t.slot].role == slot_role::value &&
             (t.value.is<double>() || t.value.is<bson::decimal128>());
    });
    if (inexact_out) add_key(retype_keys, parent);
    delta_items d{parent, {}};
    d.events.push_back({at, std::move(terms)});
    out.push_back(k.deltas(m, std::move(d)));
  };
  auto retype = [&]() {
    if (!retype_keys.empty()) out.push_back(k.retype(m, std::move(retype_keys)));
  };
  auto terms_of = [&](const child_share& s, bool subtract, std::vector<delta_term>& terms) {
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      if (s.values[i]) terms.push_back({i, *s.values[i], subtract});
    }
  };
  if (was && now && bson::compare(was->parent, now->parent) == 0) {
    // One parent (1, 1L and 1.0 are one, as MongoDB compares keys): only the values that
    // changed. Two deltas of one event to one parent would share its position, and the
    // parent's guard would apply only the first.
    std::vector<delta_term> terms;
    for (std::size_t i = 0; i < now->values.size(); ++i) {
      const auto& a = was->values[i];
      const auto& b = now->values[i];
      if (a && b && same_value(*a, *b)) continue;
      if (a) terms.push_back({i, *a, true});
      if (b) terms.push_back({i, *b, false});
    }
    emit(now->parent, std::move(terms));
    return retype();
  }
  if (was) {
    std::vector<delta_term> terms;
    terms_of(*was, true, terms);
    emit(was->parent, std::move(terms));
  }
  if (now) {
    std::vector<delta_term> terms;
    terms_of(*now, false, terms);
    emit(now->parent, std::move(terms));
  }
  retype();
}

}  // namespace aggregate_detail

write_op aggregate_kind::retype(const mapping& m, bson::array keys) const {
  // Stale: a running sum that is a decimal with no decimal child left, or a double with no
  // double nor decimal child left. A parent without the type counts (written before they
  // were kept) is not selected.
  bson::array stale;
  for (const auto& slot : slots) {
    if (slot.role != slot_role::value) continue;
    const value_slot* doubles = slot_of(slot.accumulator, slot_role::double_count);
    const value_slot* decimals = slot_of(slot.accumulator, slot_role::decimal_count);
    stale.push_back(
        bson::document{{slot.path, bson::document{{"$type", "decimal"}}}, {decimals->path, 0}});
    stale.push_back(bson::document{
        {slot.path, bson::document{{"$type", "double"}}}, {doubles->path, 0}, {decimals->path, 0}});
  }
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  bson::document parents{{parent_field, keys_match(parent_field, keys)}};
  parents.append("$or", std::move(stale));
  op.what = recompute_write{std::move(parents), std::move(keys), false};
  op.merge = merge_rule::retype;
  return op;
}

write_op aggregate_kind::deltas(const mapping& m, delta_items d) const {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  update_write w;
  // Several parents may share a key that is not _id: each keeps its own position. A parent
  // whose key is an array references nothing (as in a recompute): `{$eq: 1}` alone would
  // select [1, 2] for the deltas of both 1 and 2, two statements for one parent in a batch.
  w.many = parent_field != "_id";
  w.filter = bson::document{{parent_field, key_match(parent_field, d.parent)}};
  w.pipeline = delta_pipeline(m, d);
  op.merge = merge_rule::delta;
  op.merge_key = d.parent;
  w.delta = std::move(d);
  op.what = std::move(w);
  return op;
}

bson::document aggregate_kind::narrowed_sums(const std::vector<bool>& changed) const {
  bson::document narrowed;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const value_slot& slot = slots[s];
    if (slot.role != slot_role::value || !changed[s]) continue;
    const std::string sum = "$" + slot.path;
    const std::string longs = "$" + slot_of(slot.accumulator, slot_role::long_count)->path;
    bson::value fits =
        one("$and", list(one("$eq", list(one("$type", sum), "long")), one("$eq", list(longs, 0)),
                         one("$gte", list(sum, std::numeric_limits<std::int32_t>::min())),
                         one("$lte", list(sum, std::numeric_limits<std::int32_t>::max()))));
    narrowed.append(slot.path, one("$cond", list(std::move(fits), one("$toInt", sum), sum)));
  }
  return narrowed;
}

bson::document aggregate_kind::averages_of(const mapping& m) const {
  bson::document averages;
  for (std::size_t s = 0; s + 2 < slots.size(); ++s) {
    if (slots[s + 1].role != slot_role::numeric_count) continue;
    const accumulator& a = accumulators[slots[s].accumulator];
    const std::string sum = "$" + slots[s].path;
    const std::string count = "$" + slots[s + 1].path;
    const std::string children = "$" + slots[s + 2].path;
    bson::value none = one("$cond", list(one("$gt", list(children, 0)), bson::value(), "$$REMOVE"));
    averages.append(target_path(m, a.name),
                    one("$cond", list(one("$gt", list(count, 0)), one("$divide", list(sum, count)),
                                      std::move(none))));
  }
  return averages;
}

bson::array aggregate_kind::delta_pipeline(const mapping& m, const delta_items& d) const {
  // 1. The index of the first event the parent has not seen (its position is before it);
  //    the events are in stream order. A parent without a position has seen none.
  const std::string at = "$" + position_path();
  const std::string first = "$" + std::string(index_field);
  const auto n = static_cast<std::int32_t>(d.events.size());
  bson::array branches;
  branches.reserve(d.events.size());
  for (std::int32_t j = 0; j < n; ++j) {
    const bson::value& pos = d.events[static_cast<std::size_t>(j)].at;
    bson::document branch = one("case", one("$lt", list(at, one("$literal", pos))));
    branch.append("then", j);
    branches.emplace_back(std::move(branch));
  }
  bson::document cases = one("branches", std::move(branches));
  cases.append("default", n);
  bson::document index = one(std::string(index_field), one("$switch", std::move(cases)));
  //    A parent that has applied no event yet starts its type counts at 0.
  bson::document zeros;
  for (const auto& slot : slots) {
    if (!counts_types(slot.role)) continue;
    const std::string& field = accumulators[slot.accumulator].name;
    bson::value* counts = zeros.get(field);
    if (counts == nullptr) counts = &zeros.set(field, bson::document{});
    counts->as_document().append(slot.path.substr(slot.path.rfind('.') + 1), 0);
  }
  if (!zeros.empty()) {
    const std::string types = state + ".types";
    index.append(types, one("$cond", list(one("$eq", list(one("$type", at), "missing")),
                                          one("$literal", std::move(zeros)), "$" + types)));
  }
  // 2. Each running value plus the deltas of the events from that index on, and the position
  //    of the last event. Values are literals: a child's value never acts as an expression.
  std::vector<bson::array> sums(slots.size());
  for (std::size_t s = 0; s < slots.size(); ++s)
    sums[s].push_back(one("$ifNull", list("$" + slots[s].path, 0)));
  for (std::int32_t j = 0; j < n; ++j) {
    for (const auto& t : d.events[static_cast<std::size_t>(j)].terms) {
      bson::value v = one("$literal", t.value);
      if (t.subtract) v = one("$subtract", list(0, std::move(v)));
      sums[t.slot].emplace_back(one("$cond", list(one("$lte", list(first, j)), std::move(v), 0)));
    }
  }
  bson::document values;
  std::vector<bool> changed(slots.size());
  for (std::size_t s = 0; s < slots.size(); ++s) {
    changed[s] = sums[s].size() > 1;
    if (counts_types(slots[s].role)) {
      if (sums[s].size() == 1) continue;
      // Kept where known (stage 1 starts them on a fresh parent): a parent with a position
      // but no counts (written before they were kept) gets none until it is recomputed.
      const std::string have = "$" + slots[s].path;
      bson::value known = one("$ne", list(one("$type", have), "missing"));
      values.append(slots[s].path, one("$cond", list(std::move(known),
                                                     one("$add", std::move(sums[s])), "$$REMOVE")));
    } else if (sums[s].size() > 1) {
      values.append(slots[s].path, one("$add", std::move(sums[s])));
    }
  }
  values.append(position_path(), one("$cond", list(one("$lt", list(first, n)),
                                                   one("$literal", d.events.back().at), at)));
  bson::array stages = list(one("$set", std::move(index)), one("$set", std::move(values)));
  // 2b. A running sum of integers is an int32 again once it fits and no int64 child is left,
  //     as $group's $sum gives it ($add keeps an int64 once it has one).
  bson::document narrowed = narrowed_sums(changed);
  if (!narrowed.empty()) stages.emplace_back(one("$set", std::move(narrowed)));
  // 3. Each average from its running sum and count ($avg's type: double, or decimal); null
  //    when it has children but none with a number, removed when it has none (as $group).
  bson::document averages = averages_of(m);
  if (!averages.empty()) stages.emplace_back(one("$set", std::move(averages)));
  stages.emplace_back(one("$unset", std::string(index_field)));
  return stages;
}

bson::document aggregate_kind::update_for(const mapping& m, const bson::document* group,
                                          const bson::document& at) const {
  bson::document update = update_for(m, group);
  bson::value* set = update.get("$set");
  if (set == nullptr) set = &update.set("$set", bson::document{});
  for (const auto& slot : slots) {
    const bool avg = accumulators[slot.accumulator].op == accumulator_op::avg;
    if (!avg && !counts_types(slot.role)) continue;
    const char* part = slot.role == slot_role::long_count      ? "l"
                       : slot.role == slot_role::double_count  ? "f"
                       : slot.role == slot_role::decimal_count ? "d"
                       : slot.role == slot_role::value         ? "s"
                       : slot.role == slot_role::numeric_count ? "n"
                                                               : "c";
    const std::string field = part + std::to_string(slot.accumulator);
    const bson::value* v = group != nullptr ? group->get(field) : nullptr;
    set->as_document().append(slot.path, v != nullptr ? *v : bson::value(0));
  }
  set->as_document().append(position_path(), at);
  return update;
}

bool aggregate_kind::complete_incremental(const mapping& m, const write_op& op,
                                          document_store& store) const {
  read_options parent_opts;
  parent_opts.projection = bson::document{{"_id", 1}};
  if (parent_field != "_id") parent_opts.projection.append(parent_field, 1);
  // A parent that applied an event after the snapshot has values the snapshot does not know
  // of, and a baseline that may be wrong: it takes a new snapshot. Each round's snapshot is
  // later than the positions it read, so this ends unless the stream keeps racing it.
  constexpr int max_rounds = 10;
  return for_each_parent_chunk(op, store, parent_opts, [&](std::span<const bson::document> page) {
    std::vector<parent_ref> pending = recomputable(m, *this, op, page);
    // Children on which an expression fails: their values are left out of the snapshot, as
    // the deltas leave them out, so that the parent still gets its position and values.
    std::vector<failing_child> failing;
    int failing_rounds = 0;
    for (int round = 0; !pending.empty(); ++round) {
      if (round == max_rounds) {
        log::warn("writer", "parents kept applying events newer than each snapshot; retrying",
                  {{"mapping", m.name}, {"parents", static_cast<int>(pending.size())}});
        return false;
      }
      bson::array keys;
      for (const auto& [p, key] : pending)
        add_key(keys, *key);
      auto snap = store.aggregate_snapshot(m.source, pipeline(keys, failing));
      if (!snap) {
        if (!store.refusal() || ++failing_rounds > max_failing_rounds ||
            !find_failing(m, op, keys, store, failing))
          return false;
        --round;  // the same round again, leaving the failing values out
        continue;
      }
      const bson::document at = position_of(snap->at);
      const group_index by_key(snap->docs);
      std::vector<document_store::single_update> updates;
      bson::array ids;
      for (const auto& [p, key] : pending) {
        const bson::value& id = *p->get("_id");
        // Written unless the parent has applied an event after the snapshot.
        bson::document guarded{
            {"_id", literal(id)},
            {"$or",
             bson::array{bson::document{{position_path(), bson::document{{"$lt", at}}}},
                         bson::document{{position_path(), bson::document{{"$exists", false}}}}}}};
        updates.push_back({std::move(guarded), update_for(m, by_key.find(*key), at), {}, nullptr});
        ids.push_back(id);
      }
      const auto written = store.update_each(op, updates);
      if (!written) return false;
      read_options ids_only;
      ids_only.projection = bson::document{{"_id", 1}};
      auto ahead = store.find(op.target,
                              bson::document{{"_id", keys_match("_id", ids)},
                                             {position_path(), bson::document{{"$gt", at}}}},
                              ids_only);
      if (!ahead) return false;
      std::vector<parent_ref> again;
      for (const auto& [p, key] : pending) {
        const bool is_ahead =
            std::any_of(ahead->begin(), ahead->end(), [&, p = p](const bson::document& a) {
              const bson::value* id = a.get("_id");
              return id != nullptr && same_value(*id, *p->get("_id"));
            });
        if (is_ahead) again.emplace_back(p, key);
      }
      pending = std::move(again);
    }
    return true;
  });
}

}  // namespace denormd::mapping
