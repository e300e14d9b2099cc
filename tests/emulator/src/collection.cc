#include "collection.h"

#include <algorithm>
#include <random>

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

}  // namespace

collection::collection(std::string db, std::string name)
    : db_(std::move(db)), name_(std::move(name)), uuid_(random_uuid()) {
  index_spec id;
  id.name = "_id_";
  id.key.append("_id", std::int32_t{1});
  id.unique = true;
  indexes_.emplace_back(std::move(id));
}

doc_ptr collection::get(std::uint64_t record) const {
  auto it = records_.find(record);
  return it == records_.end() ? nullptr : it->second;
}

std::optional<std::uint64_t> collection::find_id(const bson::value& id) const {
  std::vector<std::uint64_t> found;
  indexes_.front().lookup(std::span<const bson::value>(&id, 1), found);
  for (auto record : found) {
    // The _id index holds array elements too; only a top-level _id match counts.
    const auto* v = records_.at(record)->get("_id");
    if (v != nullptr && bson::compare(*v, id) == 0) return record;
  }
  return std::nullopt;
}

std::string collection::duplicate_message(const index& ix, const index::key& k) const {
  bson::document shown;
  for (std::size_t i = 0; i < ix.fields().size() && i < k.size(); ++i)
    shown.append(ix.fields()[i], k[i]);
  return "E11000 duplicate key error collection: " + ns() + " index: " + ix.spec().name +
         " dup key: " + engine::document_text(shown);
}

denormd::status collection::check_unique(const bson::document& doc, std::uint64_t self,
                                         std::vector<index::key_set>& keys) const {
  keys.clear();
  keys.reserve(indexes_.size());
  for (const auto& ix : indexes_) {
    keys.push_back(ix.keys_for(doc));
    if (auto dup = ix.find_duplicate(keys.back(), self))
      return denormd::fail(duplicate_message(ix, *dup), codes::duplicate_key);
  }
  return {};
}

denormd::expected<std::uint64_t> collection::insert(doc_ptr doc) {
  std::vector<index::key_set> keys;
  if (auto ok = check_unique(*doc, 0, keys); !ok)
    return denormd::unexpected<denormd::error>{ok.error()};
  const std::uint64_t record = next_record_++;
  for (std::size_t i = 0; i < indexes_.size(); ++i)
    indexes_[i].add(keys[i], record);
  records_.emplace(record, std::move(doc));
  return record;
}

denormd::status collection::replace(std::uint64_t record, doc_ptr doc) {
  auto it = records_.find(record);
  if (it == records_.end()) return denormd::fail("record not found", codes::internal_error);
  std::vector<index::key_set> keys;
  if (auto ok = check_unique(*doc, record, keys); !ok) return ok;
  for (std::size_t i = 0; i < indexes_.size(); ++i) {
    auto old_keys = indexes_[i].keys_for(*it->second);
    if (old_keys.keys == keys[i].keys && old_keys.aux == keys[i].aux) continue;
    indexes_[i].remove(old_keys, record);
    indexes_[i].add(keys[i], record);
  }
  it->second = std::move(doc);
  return {};
}

void collection::erase(std::uint64_t record) {
  auto it = records_.find(record);
  if (it == records_.end()) return;
  for (auto& ix : indexes_)
    ix.remove(ix.keys_for(*it->second), record);
  records_.erase(it);
}

std::vector<std::uint64_t> collection::candidates(const denormd::query::matcher& m) const {
  const auto equalities = m.equalities();
  const index* best = nullptr;
  std::vector<bson::value> best_prefix;
  for (const auto& ix : indexes_) {
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
  std::vector<std::uint64_t> out;
  if (best == nullptr) {
    out.reserve(records_.size());
    for (const auto& [record, doc] : records_)
      out.push_back(record);
    return out;
  }
  best->lookup(best_prefix, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

denormd::expected<bool> collection::create_index(index_spec spec) {
  for (const auto& ix : indexes_) {
    if (ix.spec().name == spec.name) {
      if (ix.spec().same_definition(spec)) return false;
      return denormd::fail(
          "An existing index has the same name as the requested index. "
          "When index names are not specified, they are auto generated and can "
          "cause conflicts. Please refer to our documentation. Requested index: " +
              engine::document_text(spec.to_document()) +
              ", existing index: " + engine::document_text(ix.spec().to_document()),
          codes::index_key_specs_conflict);
    }
    if (ix.spec().key == spec.key) {
      if (ix.spec().same_definition(spec)) return false;
      return denormd::fail(
          "An equivalent index already exists with a different name and "
          "options. Requested index: " +
              engine::document_text(spec.to_document()) +
              ", existing index: " + engine::document_text(ix.spec().to_document()),
          codes::index_options_conflict);
    }
  }
  index built(std::move(spec));
  for (const auto& [record, doc] : records_) {
    auto keys = built.keys_for(*doc);
    if (auto dup = built.find_duplicate(keys, record))
      return denormd::fail(duplicate_message(built, *dup), codes::duplicate_key);
    built.add(keys, record);
  }
  indexes_.push_back(std::move(built));
  return true;
}

denormd::status collection::drop_index(std::string_view name) {
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
