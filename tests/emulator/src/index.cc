#include "index.h"

#include "query/path.h"

namespace mongo_emulator {

namespace {

// Guards against pathological compound multikey documents (MongoDB rejects parallel arrays).
constexpr std::size_t max_keys_per_document = 4096;

int compare_prefix(std::span<const bson::value> a, std::span<const bson::value> b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (int c = bson::compare(a[i], b[i]); c != 0) return c;
  }
  return 0;
}

struct component_values {
  std::vector<bson::value> values;
  std::vector<bool> aux;
};

}  // namespace

bson::document index_spec::to_document() const {
  bson::document d;
  d.append("v", std::int32_t{2});
  d.append("key", key);
  d.append("name", name);
  if (unique) d.append("unique", true);
  if (sparse) d.append("sparse", true);
  for (const auto& f : extra)
    d.append(f.name, f.val);
  return d;
}

bool index_spec::same_definition(const index_spec& other) const {
  return key == other.key && unique == other.unique && sparse == other.sparse;
}

index::index(index_spec spec) : spec_(std::move(spec)) {
  for (const auto& f : spec_.key)
    fields_.push_back(f.name);
}

void index::set_hidden(bool hidden) {
  spec_.extra.erase("hidden");
  if (hidden) spec_.extra.append("hidden", true);
}

bool index_spec::hidden() const {
  const auto* v = extra.get("hidden");
  return v != nullptr && (v->is<bool>() ? v->as<bool>() : v->is_number() && v->to_double() != 0);
}

index::key_set index::keys_for(const bson::document& doc) const {
  std::vector<component_values> components(fields_.size());
  bool any_present = false;
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    auto& c = components[i];
    denormd::query::resolve_path(doc, fields_[i],
                                 [&](const bson::value& v, std::optional<std::size_t>) {
                                   if (v.is_array()) {
                                     for (const auto& element : v.as_array()) {
                                       c.values.push_back(element);
                                       c.aux.push_back(false);
                                     }
                                     c.values.push_back(v);
                                     c.aux.push_back(true);
                                   } else {
                                     c.values.push_back(v);
                                     c.aux.push_back(false);
                                   }
                                   return true;
                                 });
    if (c.values.empty()) {
      c.values.emplace_back(bson::null_t{});
      c.aux.push_back(false);
    } else {
      any_present = true;
    }
  }
  key_set out;
  if (spec_.sparse && !any_present) return out;
  // Cartesian product of the components' values.
  std::vector<std::size_t> pos(components.size(), 0);
  while (out.keys.size() + out.aux.size() < max_keys_per_document) {
    key k;
    k.reserve(components.size());
    bool aux = false;
    for (std::size_t i = 0; i < components.size(); ++i) {
      k.push_back(components[i].values[pos[i]]);
      aux = aux || components[i].aux[pos[i]];
    }
    (aux ? out.aux : out.keys).push_back(std::move(k));
    std::size_t i = 0;
    for (; i < components.size(); ++i) {
      if (++pos[i] < components[i].values.size()) break;
      pos[i] = 0;
    }
    if (i == components.size()) break;
  }
  return out;
}

std::optional<index::key> index::find_duplicate(const key_set& keys, std::uint64_t self) const {
  if (!spec_.unique) return std::nullopt;
  for (const auto& k : keys.keys) {
    auto [begin, end] = entries_.equal_range(prefix_probe{k});
    for (auto it = begin; it != end; ++it) {
      if (!it->aux && it->record != self) return k;
    }
  }
  return std::nullopt;
}

void index::add(const key_set& keys, std::uint64_t record) {
  for (const auto& k : keys.keys)
    entries_.insert(entry{k, record, false});
  for (const auto& k : keys.aux)
    entries_.insert(entry{k, record, true});
}

void index::remove(const key_set& keys, std::uint64_t record) {
  for (const auto& k : keys.keys)
    entries_.erase(entry{k, record, false});
  for (const auto& k : keys.aux)
    entries_.erase(entry{k, record, true});
}

void index::lookup(std::span<const bson::value> prefix, std::vector<std::uint64_t>& out) const {
  auto [begin, end] = entries_.equal_range(prefix_probe{prefix});
  for (auto it = begin; it != end; ++it)
    out.push_back(it->record);
}

bool index::entry_less::operator()(const entry& a, const entry& b) const {
  if (int c = compare_prefix(a.k, b.k); c != 0) return c < 0;
  if (a.k.size() != b.k.size()) return a.k.size() < b.k.size();
  if (a.record != b.record) return a.record < b.record;
  return a.aux < b.aux;
}

bool index::entry_less::operator()(const entry& a, const prefix_probe& p) const {
  return compare_prefix(a.k, p.values) < 0;
}

bool index::entry_less::operator()(const prefix_probe& p, const entry& a) const {
  return compare_prefix(p.values, a.k) < 0;
}

}  // namespace mongo_emulator
