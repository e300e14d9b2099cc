#pragma once
// One collection index: ordered (key, record id) entries over MongoDB's value order, used for
// equality lookups on a key prefix and for unique constraints. Multikey like MongoDB: an array
// contributes one key per element (and the whole array as a lookup-only key, so equality on an
// array value can use the index too). Not synchronized: accessed under storage's lock.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

struct index_spec {
  std::string name;
  bson::document key;  // {field: 1 | -1, ...}
  bool unique = false;
  bool sparse = false;
  bson::document extra;  // other options, echoed back by listIndexes

  bson::document to_document() const;
  // Whether the planner skips it (`hidden` in the spec, from createIndexes or collMod).
  bool hidden() const;
  // Same key pattern and the same options that matter (for createIndexes idempotence).
  bool same_definition(const index_spec& other) const;
};

class index {
 public:
  using key = std::vector<bson::value>;
  struct key_set {
    std::vector<key> keys;  // the index keys MongoDB would store
    std::vector<key> aux;   // whole-array keys, for lookups only (never unique-checked)
  };

  explicit index(index_spec spec);

  const index_spec& spec() const { return spec_; }
  // collMod's `index: {hidden}`. A hidden index is still maintained and still enforces
  // uniqueness; only the planner skips it. `hidden: true` is kept last in the spec, and
  // unhiding removes it, as MongoDB's catalog does.
  void set_hidden(bool hidden);
  bool hidden() const { return spec_.hidden(); }
  const std::vector<std::string>& fields() const { return fields_; }

  // The keys `doc` contributes (none when a sparse index skips it).
  key_set keys_for(const bson::document& doc) const;
  // For unique indexes: a key of `keys` already held by a record other than `self`.
  std::optional<key> find_duplicate(const key_set& keys, std::uint64_t self) const;
  void add(const key_set& keys, std::uint64_t record);
  void remove(const key_set& keys, std::uint64_t record);
  // Records with a key whose first `prefix.size()` components equal `prefix` (may repeat).
  void lookup(std::span<const bson::value> prefix, std::vector<std::uint64_t>& out) const;

 private:
  struct entry {
    key k;
    std::uint64_t record = 0;
    bool aux = false;
  };
  struct prefix_probe {
    std::span<const bson::value> values;
  };
  struct entry_less {
    using is_transparent = void;
    bool operator()(const entry& a, const entry& b) const;
    bool operator()(const entry& a, const prefix_probe& p) const;
    bool operator()(const prefix_probe& p, const entry& a) const;
  };

  index_spec spec_;
  std::vector<std::string> fields_;
  std::set<entry, entry_less> entries_;
};

}  // namespace mongo_emulator
