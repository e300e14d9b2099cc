#include "mapping/copy_kind.h"

#include <algorithm>
#include <unordered_set>

#include "bson/identical.h"
#include "bson/json.h"
#include "mapping/change_event.h"
#include "mapping/document_store.h"
#include "mapping/kind_contract.h"
#include "mapping/mapping.h"
#include "mapping/reference.h"
#include "mapping/spec_reader.h"
#include "mapping/write_op.h"
#include "query/path.h"

namespace denormd::mapping {

namespace {

// {key: value} merged with the mapping's where clause.
bson::document with_where(bson::document filter, const std::optional<query::matcher>& where) {
  return where ? with_filter(std::move(filter), where->filter()) : filter;
}

std::string element_key_filter_path(const copy_kind& k) {
  return std::string(array_element_id) + "." + k.target_key;
}

// Where field `f` lives inside a target document or array element.
std::string copy_path(const mapping& m, const field_map& f) {
  return m.into.empty() ? f.name : m.into + "." + f.name;
}

// Keys the planner follows: present, not null, and able to be a reference at all (the
// others are dead letters when streamed, so no copy is expected for them).
bool usable_key(const bson::value* key) {
  return key != nullptr && !key->is_null() && !reference_problem(*key);
}

void add_key(std::vector<bson::value>& keys, const bson::value& key) {
  const bool seen = std::any_of(keys.begin(), keys.end(),
                                [&](const bson::value& k) { return bson::compare(k, key) == 0; });
  if (!seen) keys.push_back(key);
}

// Compares the copies in `holder` (the target, or one array element) with `source`;
// `prefix` is the holder's path in the target ("" or "items.2.").
void compare_copies(const mapping& m, const bson::document& holder, const std::string& prefix,
                    const bson::value& key, const bson::document* source, copy_finding& out) {
  if (source == nullptr) {
    add_key(out.missing_keys, key);
    if (m.on_source_delete != delete_policy::unset) return;
  }
  bool drifted = false;
  for (const auto& f : m.fields) {
    const std::string path = copy_path(m, f);
    const bson::value* want = source != nullptr ? source->find_path(f.source_path) : nullptr;
    const bson::value* have = holder.find_path(path);
    // As MongoDB's equality has it: 5 and 5.0 are one value, and a copied NaN equals its source.
    const bool same =
        want == nullptr ? have == nullptr : have != nullptr && bson::compare(*have, *want) == 0;
    if (!same) {
      out.paths.push_back(prefix + path);
      drifted = true;
    }
  }
  if (drifted) add_key(out.drifted_keys, key);
}

}  // namespace

std::set<std::string> copy_kind::keys(std::string_view object) {
  if (object == "source") return {"key"};
  if (object == "target") return {"array", "where"};
  return {};
}

const std::vector<std::pair<std::string, delete_policy>>& copy_kind::delete_policies() {
  static const std::vector<std::pair<std::string, delete_policy>> policies = {
      {"keep", delete_policy::keep}, {"unset", delete_policy::unset}};
  return policies;
}

delete_policy copy_kind::default_delete_policy() {
  return delete_policy::keep;
}

void copy_kind::read_source(spec_reader& /*r*/, spec_object& source) {
  source_key = source.path("key", false).value_or("_id");
}

void copy_kind::read_target(spec_reader& r, spec_object& target) {
  target_key = target.path("key", true).value_or("");
  target_array = target.path("array", false).value_or("");
  if (const json* w = target.get("where", false)) where = read_query(r, *w, "/target/where");
}

void copy_kind::read_rest(spec_reader& r, spec_object& /*root*/, const mapping& m) {
  const std::string key_path = target_array.empty() ? target_key : target_array + "." + target_key;
  for (const auto& p : written_paths(m)) {
    if (!target_key.empty() && query::paths_overlap(p, key_path)) {
      r.error("/target/key",
              "the key field \"" + target_key + "\" overlaps the copied path \"" + p + "\"");
      break;
    }
  }
}

void copy_kind::prepare(const mapping& m) {
  target_paths.clear();
  for (const auto& f : m.fields)
    target_paths.push_back(target_path(m, f.name));
}

std::string copy_kind::target_path(const mapping& m, std::string_view field) const {
  std::string path;
  if (!target_array.empty()) path = target_array + ".$[" + std::string(array_element_id) + "].";
  if (!m.into.empty()) path += m.into + ".";
  return path + std::string(field);
}

std::vector<std::string> copy_kind::written_paths(const mapping& m) const {
  std::vector<std::string> out;
  for (const auto& f : m.fields) {
    std::string path = target_array.empty() ? "" : target_array + ".";
    if (!m.into.empty()) path += m.into + ".";
    out.push_back(path + f.name);
  }
  return out;
}

void copy_kind::add_watched_paths(const mapping& /*m*/, std::vector<std::string>& out) const {
  if (source_key != "_id") out.push_back(source_key);
}

std::vector<std::string> copy_kind::key_paths() const {
  return {source_key};
}

std::vector<std::string> copy_kind::fill_paths() const {
  std::vector<std::string> out{target_array.empty() ? target_key : target_array};
  if (where) {
    for (const auto& p : where->paths())
      out.push_back(p);
  }
  return out;
}

bson::document copy_kind::update_for(const mapping& m, const bson::document* source) const {
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

stream_route copy_kind::route() const {
  // A copy's targets are found by the source's key alone, before and after any change.
  return stream_route{source_key, false, {}};
}

void copy_kind::plan(const mapping& m, const std::vector<std::string>& watched,
                     const change_event& ev, std::vector<write_op>& out,
                     std::vector<std::string>* notes, const key_share& share) const {
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  if (ev.op == operation::delete_ && m.on_source_delete == delete_policy::keep) return;
  // An update whose document is already gone: the delete event that follows handles it.
  if (ev.op != operation::delete_ && !ev.full_document) return;

  const bson::value* key = &ev.id;
  if (source_key != "_id") {
    const auto& doc =
        ev.op == operation::delete_ ? ev.full_document_before_change : ev.full_document;
    key = doc ? doc->find_path(source_key) : nullptr;
    if (key == nullptr) {
      if (notes != nullptr && ev.op == operation::delete_) {
        notes->push_back(m.name + ": a delete of " + ev.source.full() + " carries no \"" +
                         source_key +
                         "\"; enable pre-images (changeStreamPreAndPostImages) "
                         "so onSourceDelete can find the targets");
      }
      return;
    }
  }
  if (!share.owns(*key)) return;

  const std::string ns = ev.source.full();
  if (refused(m, {m.name, "source key", source_key, ns, source_key == "_id" ? nullptr : &ev.id},
              *key, out)) {
    return;
  }

  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.merge = merge_rule::last_wins;
  op.merge_key = *key;
  update_write w;
  w.many = !target_array.empty() || target_key != "_id";
  if (target_array.empty()) {
    w.filter = with_where(bson::document{{target_key, key_match(target_key, *key)}}, where);
  } else {
    // An element whose key is an array is left out by the array filter, not by this one.
    w.filter = with_where(bson::document{{target_array + "." + target_key, literal(*key)}}, where);
    w.array_filters.push_back(
        bson::document{{element_key_filter_path(*this), key_match(target_key, *key)}});
  }
  w.update = update_for(m, ev.op == operation::delete_ ? nullptr : &*ev.full_document);
  op.what = std::move(w);
  out.push_back(std::move(op));
}

bool copy_kind::key_is_new(const change_event& ev, const bson::document* before,
                           const bson::value& key) const {
  if (before != nullptr) {
    // The pre-image says which keys the target held.
    bool held = false;
    if (target_array.empty()) {
      const bson::value* was = before->find_path(target_key);
      held = was != nullptr && bson::compare(*was, key) == 0;
    } else if (const bson::value* items = before->find_path(target_array);
               items != nullptr && items->is_array()) {
      for (const auto& item : items->as_array()) {
        const bson::value* was =
            item.is_document() ? item.as_document().find_path(target_key) : nullptr;
        held = held || (was != nullptr && bson::compare(*was, key) == 0);
      }
    }
    return !held;
  }
  // Without one: an update that set the key itself (an array element's key cannot be told
  // from the event alone, nor can a replacement's).
  return ev.op == operation::update && target_array.empty() && touches(ev.touched, {target_key});
}

void copy_kind::plan_new_target(const mapping& m, const std::vector<std::string>& watched,
                                const change_event& ev, std::vector<write_op>& out) const {
  if (ev.op == operation::delete_) return;
  if (ev.op == operation::update && !touches(ev.touched, watched)) return;
  if (!ev.full_document) return;
  const bson::document& target = *ev.full_document;
  const std::string ns = ev.source.full();
  if (refused(m, {m.name, "_id", "_id", ns, nullptr}, ev.id, out)) return;
  if (where && !where->matches(target)) return;  // e.g. a delivered order keeps its snapshot
  const bson::document* before =
      ev.full_document_before_change ? &*ev.full_document_before_change : nullptr;
  auto fill_one = [&](const bson::value& key, bson::array array_filters) {
    write_op op;
    op.source_mapping = &m;
    op.target = m.target;
    // Only while the target still names the key: a fill completed late (a replay, or an
    // earlier event of the batch) must not copy an old source into a re-keyed target.
    bson::document filter{{"_id", literal(ev.id)}};
    if (target_array.empty() && target_key != "_id")
      filter.append(target_key, key_match(target_key, key));
    // Under "keep" only a target that kept a copy of this very source keeps it: one re-keyed
    // to a source that does not exist holds its old source's copy, which is no one's.
    const bool unset = m.on_source_delete == delete_policy::unset ||
                       (ev.op != operation::insert && key_is_new(ev, before, key));
    op.what = fill_write{with_where(std::move(filter), where), std::move(array_filters),
                         fill_query{m.source, source_key, key}, unset};
    out.push_back(std::move(op));
  };
  if (target_array.empty()) {
    const bson::value* key = target.find_path(target_key);
    if (key == nullptr || key->is_null()) return;
    if (!refused(m, {m.name, "target key", target_key, ns, &ev.id}, *key, out)) fill_one(*key, {});
    return;
  }
  const bson::value* items = target.find_path(target_array);
  if (items == nullptr || !items->is_array()) return;
  bson::array seen;
  for (const auto& item : items->as_array()) {
    const bson::value* key =
        item.is_document() ? item.as_document().find_path(target_key) : nullptr;
    if (key == nullptr || key->is_null() ||
        std::find(seen.begin(), seen.end(), *key) != seen.end()) {
      continue;
    }
    seen.push_back(*key);
    const std::string field = target_array + "." + target_key;
    if (refused(m, {m.name, "target key", field, ns, &ev.id}, *key, out)) continue;
    fill_one(
        *key,
        bson::array{bson::document{{element_key_filter_path(*this), key_match(target_key, *key)}}});
  }
}

namespace {

// Fills per round: bounds one read's $in list and its reply.
constexpr std::size_t fill_round = 256;

// The target one fill writes (a document, or one element of its array), as text: two fills
// of one target are never in the same round, so that they are applied in plan order.
std::string fill_target(const fill_write& w) {
  const bson::value* id = w.filter.get("_id");
  return (id != nullptr ? bson::to_json(*id) : std::string()) + bson::to_json(w.array_filters);
}

// The source documents of some keys, read in one round trip.
class source_index {
 public:
  // `keys` sorted by bson::value_less, distinct. False when the store failed.
  bool read(const fill_query& q, bson::array keys, document_store& store) {
    keys_ = std::move(keys);
    docs_.assign(keys_.size(), std::nullopt);
    if (keys_.empty()) return true;
    // A key matches one source normally; the limit bounds what a key shared by many
    // documents can cost. When it is reached, a key found in none of the documents read may
    // have been cut off, and is read on its own below.
    read_options opts;
    opts.limit = static_cast<int>(keys_.size());
    auto found =
        store.find(q.source, bson::document{{q.key_field, keys_match(q.key_field, keys_)}}, opts);
    if (!found) return false;
    for (auto& doc : *found) {
      // A document may name several keys through an array on the path: it is each one's.
      query::resolve_path(doc, q.key_field, [&](const bson::value& v, std::optional<std::size_t>) {
        if (v.is_array()) return true;
        const auto it = std::lower_bound(keys_.begin(), keys_.end(), v, bson::value_less{});
        if (it != keys_.end() && bson::compare(*it, v) == 0) {
          auto& slot = docs_[static_cast<std::size_t>(it - keys_.begin())];
          if (!slot) slot = doc;  // the first, as find_one would
        }
        return true;
      });
    }
    if (found->size() < keys_.size()) return true;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (docs_[i]) continue;
      auto one = store.find_one(q.source, fill_filter({q.source, q.key_field, keys_[i]}));
      if (!one) return false;
      docs_[i] = std::move(*one);
    }
    return true;
  }
  // The source of `key` (one of those read); nullptr when there is none.
  const bson::document* find(const bson::value& key) const {
    const auto it = std::lower_bound(keys_.begin(), keys_.end(), key, bson::value_less{});
    if (it == keys_.end() || bson::compare(*it, key) != 0) return nullptr;
    const auto& doc = docs_[static_cast<std::size_t>(it - keys_.begin())];
    return doc ? &*doc : nullptr;
  }

 private:
  bson::array keys_;
  std::vector<std::optional<bson::document>> docs_;
};

// The distinct keys of some fills, sorted.
bson::array keys_of(std::span<const write_op* const> ops) {
  bson::array keys;
  for (const write_op* op : ops)
    keys.push_back(std::get<fill_write>(op->what).source.key);
  std::sort(keys.begin(), keys.end(), bson::value_less{});
  keys.erase(std::unique(keys.begin(), keys.end(),
                         [](const bson::value& a, const bson::value& b) {
                           return bson::compare(a, b) == 0;
                         }),
             keys.end());
  return keys;
}

}  // namespace

static_assert(mapping_kind<copy_kind>);

void copy_kind::absorb(const mapping& /*m*/, write_op& /*later*/, write_op&& /*earlier*/) const {}

void copy_kind::finish(const mapping& /*m*/, write_op&& op, std::vector<write_op>& out) const {
  out.push_back(std::move(op));
}

void copy_kind::explain(const mapping& /*m*/, const write_op& /*op*/,
                        bson::document& /*out*/) const {}

bool copy_kind::complete(const mapping& m, const write_op& op, document_store& store) const {
  const write_op* one[] = {&op};
  return complete(m, one, store);
}

bool copy_kind::complete(const mapping& m, std::span<const write_op* const> ops,
                         document_store& store) const {
  std::size_t start = 0;
  while (start < ops.size()) {
    std::unordered_set<std::string> targets;
    std::size_t end = start;
    while (end < ops.size() && end - start < fill_round &&
           targets.insert(fill_target(std::get<fill_write>(ops[end]->what))).second) {
      ++end;
    }
    if (!complete_round(m, ops.subspan(start, end - start), store)) return false;
    start = end;
  }
  return true;
}

bool copy_kind::complete_round(const mapping& m, std::span<const write_op* const> ops,
                               document_store& store) const {
  // Every fill of a mapping reads the same collection by the same field.
  const fill_query& q = std::get<fill_write>(ops.front()->what).source;
  source_index sources;
  if (!sources.read(q, keys_of(ops), store)) return false;
  struct pending_fill {
    const write_op* op;
    bson::document update;
  };
  std::vector<pending_fill> pending;
  for (const write_op* op : ops) {
    // No source (yet): the copies go if the fill says so; the source's insert event fills it.
    const auto& fill = std::get<fill_write>(op->what);
    const bson::document* source = sources.find(fill.source.key);
    if (source != nullptr || fill.unset_without_source)
      pending.push_back({op, update_for(m, source)});
  }
  // The source's own stream writes these copies too, from another thread: if it applies a
  // newer source between our read and our write, our older copy would win for good. So the
  // sources are read again after each write until what was written is still current; a
  // change after that read is applied by the source's stream after our write.
  while (!pending.empty()) {
    std::vector<document_store::single_update> updates;
    updates.reserve(pending.size());
    for (const auto& p : pending) {
      const auto& fill = std::get<fill_write>(p.op->what);
      updates.push_back({fill.filter, p.update, fill.array_filters, p.op});
    }
    const auto written = store.update_each(*pending.front().op, updates);
    if (!written) return false;
    std::vector<const write_op*> applied;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if ((*written)[i] == store_write::applied) applied.push_back(pending[i].op);
    }
    if (applied.empty()) return true;
    source_index again;
    if (!again.read(q, keys_of(applied), store)) return false;
    std::vector<pending_fill> next;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if ((*written)[i] != store_write::applied) continue;  // refused: a dead letter now
      const bson::document* now = again.find(std::get<fill_write>(pending[i].op->what).source.key);
      // Deleted since: the copies stay, or go as the delete policy says.
      if (now == nullptr && m.on_source_delete == delete_policy::keep) continue;
      bson::document current = update_for(m, now);
      if (bson::identical(current, pending[i].update)) continue;
      next.push_back({pending[i].op, std::move(current)});
    }
    pending = std::move(next);
  }
  return true;
}

std::vector<bson::value> copy_kind::referenced_keys(const mapping& /*m*/,
                                                    const bson::document& target) const {
  std::vector<bson::value> keys;
  if (target_array.empty()) {
    const bson::value* key = target.find_path(target_key);
    if (usable_key(key)) keys.push_back(*key);
    return keys;
  }
  const bson::value* items = target.find_path(target_array);
  if (items == nullptr || !items->is_array()) return keys;
  for (const auto& item : items->as_array()) {
    if (!item.is_document()) continue;
    const bson::value* key = item.as_document().find_path(target_key);
    if (usable_key(key)) add_key(keys, *key);
  }
  return keys;
}

copy_finding copy_kind::check(const mapping& m, const bson::document& target,
                              const source_lookup& source) const {
  copy_finding out;
  if (target_array.empty()) {
    const bson::value* key = target.find_path(target_key);
    if (usable_key(key)) compare_copies(m, target, "", *key, source(*key), out);
    return out;
  }
  const bson::value* items = target.find_path(target_array);
  if (items == nullptr || !items->is_array()) return out;
  const auto& elements = items->as_array();
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (!elements[i].is_document()) continue;
    const bson::value* key = elements[i].as_document().find_path(target_key);
    if (!usable_key(key)) continue;
    compare_copies(m, elements[i].as_document(), target_array + "." + std::to_string(i) + ".", *key,
                   source(*key), out);
  }
  return out;
}

void copy_kind::describe(const mapping& m, std::string& s) const {
  std::string filter = (target_array.empty() ? target_key : target_array + "." + target_key) +
                       ": <source " + source_key + ">";
  if (where) filter += ", where " + bson::to_json(where->filter());
  const char* op = target_array.empty() && target_key == "_id" ? "updateOne" : "updateMany";
  std::string paths;
  for (const auto& p : target_paths)
    paths += (paths.empty() ? "" : ", ") + p;
  s += "  insert, replace, and updates touching those fields:\n";
  s += "    " + std::string(op) + " " + m.target.full() + " {" + filter + "}\n";
  s += "      $set " + paths + " (a missing source field is $unset)\n";
  if (!target_array.empty()) {
    s += "      arrayFilters [{e." + target_key + ": <source " + source_key + ">}]\n";
  }
  s += std::string("  delete: ") +
       (m.on_source_delete == delete_policy::keep ? "keep (no write)" : "$unset " + paths) + "\n";
  if (m.fill_new_targets) s += "  new or re-keyed targets: filled from the source\n";
}

void copy_kind::indexes(const mapping& m, std::vector<index_need>& out) const {
  const std::string key = target_array.empty() ? target_key : target_array + "." + target_key;
  if (key != "_id") {
    out.push_back(
        {m.target, bson::to_json(bson::document{{key, 1}}), "find the targets of a source"});
  }
  if (source_key != "_id") {
    out.push_back(
        {m.source, bson::to_json(bson::document{{source_key, 1}}), "look up a target's source"});
  }
}

void copy_kind::warnings(const mapping& m, std::vector<std::string>& out) const {
  if (!where || m.fill_new_targets) return;
  out.push_back(m.name + " (" + m.file +
                "): target.where without fillNewTargets: a target that comes (back) into the "
                "where, e.g. an order whose status returns to a matching value, keeps the copy "
                "it had when it left until its source changes again or `denormd verify "
                "--repair` runs; set \"fillNewTargets\": true to copy the source when it enters");
}

void copy_kind::fingerprint(std::string& s) const {
  s += "|" + source_key + "|" + target_key + "|" + target_array + "|";
  if (where) s += bson::to_json(where->filter(), bson::json_mode::canonical);
  // The recent kind's settings at their defaults: stored fingerprints stay what they were
  // when both kinds shared one flat struct.
  s += "||_id||0";
}

}  // namespace denormd::mapping
