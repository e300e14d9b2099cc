#include "collection.h"

#include <algorithm>
#include <random>
#include <span>

#include "error_codes.h"
#include "query/matcher.h"
#include "value_text.h"

namespace mongo_emulator {

namespace {

bson::binary random_uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  bson::binary b;
  b.subtype = 4;
  b.data.resize(16);
  for (auto& byte : b.data)
    byte = static_cast<std::uint8_t>(rng());
  b.data[6] = static_cast<std::uint8_t>((b.data[6] & 0x0F) | 0x40);
  b.data[8] = static_cast<std::uint8_t>((b.data[8] & 0x3F) | 0x80);
  return b;
}

// Equality values an index lookup can serve exactly as a superset of the matches. Null also
// matches documents missing the field in ways the index does not record, regexes match by
// pattern, so both fall back to a scan.
bool indexable(const bson::value& v) {
  return !v.is_null() && !v.is<bson::regex>() && !v.is<bson::undefined_t>();
}

// The `{path: {$in: [...]}}` lists of a filter, at the top level or inside $and, whose every
// value an index lookup can serve: like MongoDB's planner, one seek per value.
void collect_in_lists(const bson::document& filter,
                      std::vector<std::pair<std::string, const bson::array*>>& out) {
  for (const auto& f : filter) {
    if (f.name == "$and" && f.val.is_array()) {
      for (const auto& item : f.val.as_array()) {
        if (item.is_document()) collect_in_lists(item.as_document(), out);
      }
    } else if (!f.name.starts_with('$') && denormd::query::is_operator_document(f.val)) {
      const bson::value* in = f.val.as_document().get("$in");
      if (in == nullptr || !in->is_array()) continue;
      const auto& list = in->as_array();
      if (std::all_of(list.begin(), list.end(), indexable)) out.emplace_back(f.name, &list);
    }
  }
}

}  // namespace

namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (true) {
    const auto dot = path.find('.');
    out.push_back(path.substr(0, dot));
    if (dot == std::string_view::npos) return out;
    path.remove_prefix(dot + 1);
  }
}

bool numeric(std::string_view part) {
  return !part.empty() &&
         std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether the changed location p[i..] can line up with a location the index reads under
// f[j..]: equal components advance both; a numeric change component may also be an array
// position the index path passes through implicitly (multikey). Running out of either path
// means one location contains the other.
bool may_overlap(std::span<const std::string_view> p, std::span<const std::string_view> f) {
  if (p.empty() || f.empty()) return true;
  if (p.front() == f.front() && may_overlap(p.subspan(1), f.subspan(1))) return true;
  return numeric(p.front()) && may_overlap(p.subspan(1), f);
}

}  // namespace

bool path_may_affect(std::string_view changed, std::string_view index_field) {
  const auto p = components(changed);
  const auto f = components(index_field);
  return may_overlap(p, f);
}

collection::collection(std::string db, std::string name)
    : db_(std::move(db)),
      name_(std::move(name)),
      uuid_(std::make_shared<const bson::binary>(random_uuid())) {
  id_spec_.name = "_id_";
  id_spec_.key.append("_id", std::int32_t{1});
}

std::unique_ptr<collection> collection::view_of(std::shared_ptr<const collection> base) {
  auto v = std::make_unique<collection>(base->db_, base->name_);
  v->uuid_ = base->uuid_;
  v->record_images_ = base->record_images_;
  v->options_ = base->options_;
  v->base_ = std::move(base);
  return v;
}

void collection::keep_snapshot_version(const bson::value& id, doc_ptr before,
                                       std::optional<std::uint64_t> record) {
  shadowed_.insert(id);
  if (before == nullptr) return;
  const std::uint64_t r = record.value_or(next_own_record_++);
  own_[r] = std::move(before);
  own_ids_[id] = r;
}

const doc_ptr& collection::get(std::uint64_t record) const {
  static const doc_ptr none;
  if (base_ != nullptr) {
    if (auto it = own_.find(record); it != own_.end()) return it->second;
    const doc_ptr& d = base_->get(record);
    if (d != nullptr && !shadowed_.empty() && shadowed_.contains(*d->get("_id"))) return none;
    return d;
  }
  return record >= 1 && record <= records_.size() ? records_[record - 1] : none;
}

std::optional<std::uint64_t> collection::find_id(const bson::value& id) const {
  if (base_ != nullptr) {
    if (auto it = own_ids_.find(id); it != own_ids_.end()) return it->second;
    if (shadowed_.contains(id)) return std::nullopt;
    auto r = base_->find_id(id);
    if (!r || own_.contains(*r)) return std::nullopt;  // deleted in the view
    return r;
  }
  auto it = ids_.find(id);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::size_t collection::size() const {
  if (base_ == nullptr) return ids_.size();
  // The base's documents, less those the view does not see as the base has them, plus the
  // view's own versions.
  std::unordered_set<std::uint64_t> hidden;
  for (const auto& id : shadowed_) {
    if (auto r = base_->find_id(id)) hidden.insert(*r);
  }
  std::size_t own = 0;
  for (const auto& [r, d] : own_) {
    if (base_->get(r) != nullptr) hidden.insert(r);
    if (d != nullptr) ++own;
  }
  return base_->size() - hidden.size() + own;
}

std::vector<index_spec> collection::index_specs() const {
  if (base_ != nullptr) return base_->index_specs();
  std::vector<index_spec> out{id_spec_};
  for (const auto& ix : indexes_)
    out.push_back(ix.spec());
  return out;
}

void append_duplicate_key_details(const denormd::error& e, bson::document& out) {
  const auto* d = dynamic_cast<const duplicate_key_details*>(e.details.get());
  if (d == nullptr) return;
  out.append("keyPattern", d->key_pattern);
  out.append("keyValue", d->key_value);
}

denormd::error collection::duplicate_error(const index_spec& spec, const index::key& k) const {
  auto details = std::make_shared<duplicate_key_details>();
  details->key_pattern = spec.key;
  std::size_t i = 0;
  for (const auto& f : spec.key) {
    if (i >= k.size()) break;
    details->key_value.append(f.name, k[i++]);
  }
  return {"E11000 duplicate key error collection: " + ns() + " index: " + spec.name +
              " dup key: " + engine::document_text(details->key_value),
          codes::duplicate_key, std::move(details)};
}

denormd::status collection::check_unique(const bson::document& doc, std::uint64_t self,
                                         std::vector<index::key_set>& keys,
                                         const std::vector<bool>* affected) const {
  keys.clear();
  keys.resize(indexes_.size());
  for (std::size_t i = 0; i < indexes_.size(); ++i) {
    if (affected != nullptr && !(*affected)[i]) continue;
    const auto& ix = indexes_[i];
    keys[i] = ix.keys_for(doc);
    if (auto dup = ix.find_duplicate(keys[i], self))
      return denormd::unexpected<denormd::error>{duplicate_error(ix.spec(), *dup)};
  }
  return {};
}

denormd::status collection::check_unique_in_view(const bson::document& doc,
                                                 std::uint64_t self) const {
  for (const auto& ix : base_->indexes_) {
    if (!ix.spec().unique) continue;
    const auto keys = ix.keys_for(doc).keys;
    // The first of `keys` that `other` holds too.
    auto shared_key = [&](const bson::document& other) -> const index::key* {
      const auto theirs = ix.keys_for(other).keys;
      for (const auto& k : keys) {
        if (std::find(theirs.begin(), theirs.end(), k) != theirs.end()) return &k;
      }
      return nullptr;
    };
    auto check = [&](std::uint64_t r) -> denormd::status {
      // The record as the view sees it: it may hold other keys here than in the base, or be gone.
      const doc_ptr& other = get(r);
      if (r == self || other == nullptr) return {};
      if (const index::key* k = shared_key(*other))
        return denormd::unexpected<denormd::error>{duplicate_error(ix.spec(), *k)};
      return {};
    };
    for (const auto& k : keys) {
      std::vector<std::uint64_t> records;
      ix.lookup(k, records);
      for (auto r : records) {
        if (auto ok = check(r); !ok) return ok;
      }
    }
    for (const auto& [r, d] : own_) {
      if (auto ok = check(r); !ok) return ok;
    }
  }
  return {};
}

denormd::expected<std::uint64_t> collection::insert(doc_ptr doc) {
  const bson::value* id = doc->get("_id");
  if (id == nullptr) return denormd::fail("document has no _id", codes::internal_error);
  if (base_ != nullptr) {
    if (find_id(*id))
      return denormd::unexpected<denormd::error>{duplicate_error(id_spec_, index::key{*id})};
    if (auto ok = check_unique_in_view(*doc, 0); !ok)
      return denormd::unexpected<denormd::error>{ok.error()};
    const std::uint64_t record = next_own_record_++;
    own_ids_[*id] = record;
    own_[record] = std::move(doc);
    return record;
  }
  if (ids_.contains(*id))
    return denormd::unexpected<denormd::error>{duplicate_error(id_spec_, index::key{*id})};
  std::vector<index::key_set> keys;
  if (auto ok = check_unique(*doc, 0, keys); !ok)
    return denormd::unexpected<denormd::error>{ok.error()};
  const std::uint64_t record = records_.size() + 1;
  for (std::size_t i = 0; i < indexes_.size(); ++i)
    indexes_[i].add(keys[i], record);
  ids_.emplace(*id, record);
  records_.push_back(std::move(doc));
  return record;
}

denormd::status collection::replace(std::uint64_t record, doc_ptr doc) {
  return replace_keys(record, std::move(doc), nullptr);
}

denormd::status collection::update(std::uint64_t record, doc_ptr doc,
                                   const bson::document& update_description) {
  std::vector<std::string_view> changed;
  for (const auto& f : update_description) {
    if (f.name == "updatedFields" && f.val.is_document()) {
      for (const auto& u : f.val.as_document())
        changed.emplace_back(u.name);
    } else if (f.name == "removedFields" && f.val.is_array()) {
      for (const auto& r : f.val.as_array()) {
        if (!r.is_string()) return replace_keys(record, std::move(doc), nullptr);
        changed.emplace_back(r.as_string());
      }
    } else if (f.name == "truncatedArrays" && f.val.is_array()) {
      for (const auto& t : f.val.as_array()) {
        const auto* field = t.is_document() ? t.as_document().get("field") : nullptr;
        if (field == nullptr || !field->is_string())
          return replace_keys(record, std::move(doc), nullptr);
        changed.emplace_back(field->as_string());
      }
    }
  }
  // A change with no described path: take no chances.
  if (changed.empty()) return replace_keys(record, std::move(doc), nullptr);
  std::vector<bool> affected(indexes_.size(), false);
  for (std::size_t i = 0; i < indexes_.size(); ++i) {
    for (const auto& field : indexes_[i].fields()) {
      for (auto path : changed)
        affected[i] = affected[i] || path_may_affect(path, field);
    }
  }
  return replace_keys(record, std::move(doc), &affected);
}

denormd::status collection::replace_keys(std::uint64_t record, doc_ptr doc,
                                         const std::vector<bool>* affected) {
  if (get(record) == nullptr) return denormd::fail("no such record", codes::internal_error);
  if (base_ != nullptr) {
    if (auto ok = check_unique_in_view(*doc, record); !ok) return ok;
    own_ids_[*doc->get("_id")] = record;
    own_[record] = std::move(doc);
    return {};
  }
  doc_ptr& slot = records_[record - 1];
  // `_id` is immutable (the engine refuses to change it), so the _id map stays as it is.
  std::vector<index::key_set> keys;
  if (auto ok = check_unique(*doc, record, keys, affected); !ok) return ok;
  for (std::size_t i = 0; i < indexes_.size(); ++i) {
    if (affected != nullptr && !(*affected)[i]) continue;
    auto old_keys = indexes_[i].keys_for(*slot);
    if (old_keys.keys == keys[i].keys && old_keys.aux == keys[i].aux) continue;
    indexes_[i].remove(old_keys, record);
    indexes_[i].add(keys[i], record);
  }
  slot = std::move(doc);
  return {};
}

void collection::erase(std::uint64_t record) {
  if (get(record) == nullptr) return;
  if (base_ != nullptr) {
    own_ids_.erase(*get(record)->get("_id"));
    own_[record] = nullptr;
    return;
  }
  doc_ptr& slot = records_[record - 1];
  for (auto& ix : indexes_)
    ix.remove(ix.keys_for(*slot), record);
  ids_.erase(*slot->get("_id"));
  slot.reset();
}

std::vector<std::uint64_t> collection::candidates(const denormd::query::matcher& m) const {
  if (base_ != nullptr) {
    // The base's candidates the view sees, and every record of its own (few: what the
    // transaction wrote or kept from its snapshot), which may hold other keys than the base.
    auto out = base_->candidates(m);
    std::erase_if(out, [&](std::uint64_t r) { return get(r) == nullptr; });
    for (const auto& [r, d] : own_) {
      if (d != nullptr) out.push_back(r);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  if (auto indexed = indexed_candidates(m.filter())) return std::move(*indexed);
  std::vector<std::uint64_t> out;
  out.reserve(ids_.size());
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (records_[i] != nullptr) out.push_back(i + 1);
  }
  return out;
}

namespace {

// The `$or` clause lists of a filter, at the top level or inside $and.
void collect_or_lists(const bson::document& filter, std::vector<const bson::array*>& out) {
  for (const auto& f : filter) {
    if (f.name == "$or" && f.val.is_array()) {
      out.push_back(&f.val.as_array());
    } else if (f.name == "$and" && f.val.is_array()) {
      for (const auto& item : f.val.as_array()) {
        if (item.is_document()) collect_or_lists(item.as_document(), out);
      }
    }
  }
}

void sort_unique(std::vector<std::uint64_t>& records) {
  std::sort(records.begin(), records.end());
  records.erase(std::unique(records.begin(), records.end()), records.end());
}

}  // namespace

std::optional<std::vector<std::uint64_t>> collection::indexed_candidates(
    const bson::document& filter, int depth) const {
  const auto equalities = denormd::query::equalities_of(filter);
  std::vector<std::uint64_t> out;
  for (const auto& [path, v] : equalities) {
    if (path != "_id" || !indexable(v)) continue;
    if (auto record = find_id(v)) out.push_back(*record);
    return out;
  }
  // `_id: {$in: [...]}` bounds the candidates by the list, whatever else the filter asks (as
  // MongoDB's planner would pick the _id index over an equality matching far more documents).
  std::vector<std::pair<std::string, const bson::array*>> in_lists;
  collect_in_lists(filter, in_lists);
  for (const auto& [path, list] : in_lists) {
    if (path != "_id") continue;
    for (const auto& v : *list) {
      if (auto record = find_id(v)) out.push_back(*record);
    }
    sort_unique(out);
    return out;
  }
  const index* best = nullptr;
  std::vector<bson::value> best_prefix;
  for (const auto& ix : indexes_) {
    if (ix.hidden()) continue;
    std::vector<bson::value> prefix;
    for (const auto& field : ix.fields()) {
      auto it = std::find_if(equalities.begin(), equalities.end(),
                             [&](const auto& e) { return e.first == field; });
      if (it == equalities.end() || !indexable(it->second)) break;
      prefix.push_back(it->second);
    }
    if (prefix.size() > best_prefix.size()) {
      best = &ix;
      best_prefix = std::move(prefix);
    }
  }
  if (best != nullptr) {
    best->lookup(best_prefix, out);
    sort_unique(out);
    return out;
  }
  for (const auto& [path, list] : in_lists) {
    const index* by = nullptr;
    for (const auto& ix : indexes_) {
      if (!ix.hidden() && !ix.fields().empty() && ix.fields().front() == path) by = &ix;
    }
    if (path != "_id" && by == nullptr) continue;
    for (const auto& v : *list) {
      if (path == "_id") {
        if (auto record = find_id(v)) out.push_back(*record);
      } else {
        by->lookup(std::span(&v, 1), out);
      }
    }
    sort_unique(out);
    return out;
  }
  // As MongoDB's planner does for $or (an OR stage over one index scan per clause), only when
  // every clause can use an index; the union is then a superset of the matches.
  std::vector<const bson::array*> ors;
  collect_or_lists(filter, ors);
  constexpr int max_or_depth = 4;
  if (depth >= max_or_depth) return std::nullopt;
  for (const bson::array* clauses : ors) {
    if (clauses->empty()) continue;
    std::vector<std::uint64_t> all;
    bool every = true;
    for (const auto& clause : *clauses) {
      auto part =
          clause.is_document() ? indexed_candidates(clause.as_document(), depth + 1) : std::nullopt;
      if (!part) {
        every = false;
        break;
      }
      all.insert(all.end(), part->begin(), part->end());
    }
    if (!every) continue;
    sort_unique(all);
    return all;
  }
  return std::nullopt;
}

denormd::expected<bool> collection::create_index(index_spec spec) {
  if (base_ != nullptr)
    return denormd::fail("index changes inside a transaction",
                         codes::operation_not_supported_in_transaction);
  for (const auto& existing : index_specs()) {
    const bool same_name = existing.name == spec.name;
    if (!same_name && !(existing.key == spec.key)) continue;
    if (existing.same_definition(spec)) return false;
    const std::string both = "Requested index: " + engine::document_text(spec.to_document()) +
                             ", existing index: " + engine::document_text(existing.to_document());
    if (same_name)
      return denormd::fail(
          "An existing index has the same name as the requested index. When "
          "index names are not specified, they are auto generated and can cause "
          "conflicts. Please refer to our documentation. " +
              both,
          codes::index_key_specs_conflict);
    return denormd::fail(
        "An equivalent index already exists with a different name and options. " + both,
        codes::index_options_conflict);
  }
  index built(std::move(spec));
  for (std::size_t i = 0; i < records_.size(); ++i) {
    if (records_[i] == nullptr) continue;
    auto keys = built.keys_for(*records_[i]);
    if (auto dup = built.find_duplicate(keys, i + 1))
      return denormd::unexpected<denormd::error>{duplicate_error(built.spec(), *dup)};
    built.add(keys, i + 1);
  }
  indexes_.push_back(std::move(built));
  return true;
}

denormd::expected<bool> collection::set_index_hidden(std::string_view name, bool hidden) {
  if (base_ != nullptr)
    return denormd::fail("index changes inside a transaction",
                         codes::operation_not_supported_in_transaction);
  auto it = std::find_if(indexes_.begin(), indexes_.end(),
                         [&](const index& ix) { return ix.spec().name == name; });
  if (it == indexes_.end())
    return denormd::fail("index not found with name [" + std::string(name) + "]",
                         codes::index_not_found);
  const bool was = it->hidden();
  it->set_hidden(hidden);
  return was;
}

denormd::status collection::drop_index(std::string_view name) {
  if (base_ != nullptr)
    return denormd::fail("index changes inside a transaction",
                         codes::operation_not_supported_in_transaction);
  if (name == "_id_") return denormd::fail("cannot drop _id index", codes::invalid_options);
  auto it = std::find_if(indexes_.begin(), indexes_.end(),
                         [&](const index& ix) { return ix.spec().name == name; });
  if (it == indexes_.end())
    return denormd::fail("index not found with name [" + std::string(name) + "]",
                         codes::index_not_found);
  indexes_.erase(it);
  return {};
}

}  // namespace mongo_emulator
