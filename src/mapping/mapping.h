#pragma once
// The typed, validated form of one mapping file (DESIGN §2). Built by config/mapping_loader;
// immutable afterwards and safe to share between threads.

#include <optional>
#include <string>
#include <vector>

#include "query/matcher.h"

namespace denormd::mapping {

// A MongoDB namespace.
struct ns {
  std::string db;
  std::string coll;
  std::string full() const { return db + "." + coll; }
  bool operator==(const ns&) const = default;
  auto operator<=>(const ns&) const = default;
};

enum class mapping_kind { copy, recent };

enum class delete_policy {
  keep,            // copy: leave the copies as they are
  unset,           // copy: remove the copied fields
  pull,            // recent: remove the element
  pull_and_refill  // recent: remove the element and refill the array from the children
};

// One copied field: `name` under `into` in the target, read from `source_path`.
struct field_map {
  std::string name;
  std::string source_path;
};

struct sort_key {
  std::string name;  // a field name in `fields`
  int direction = 1;
};

struct mapping {
  std::string name;
  std::string file;  // where it was loaded from, for messages
  std::string description;
  mapping_kind kind = mapping_kind::copy;
  ns source;
  ns target;
  std::string into;  // copy: optional prefix of the copied fields; recent: the array field
  std::vector<field_map> fields;
  delete_policy on_source_delete = delete_policy::keep;

  // copy
  std::string source_key = "_id";  // source field whose value the targets reference
  std::string target_key;          // target field (inside the array element with target_array)
  std::string target_array;        // non-empty: copies live in each matching element
  std::optional<query::matcher> where;
  bool fill_new_targets = false;

  // recent
  std::string parent_key;            // child field holding the parent's key
  std::string parent_field = "_id";  // parent field that parent_key refers to
  std::optional<query::matcher> filter;
  std::string id_field;        // the name in `fields` that identifies an element (copies _id)
  std::vector<sort_key> sort;  // always ends with id_field as a tie-breaker
  int limit = 0;

  // Where a copied field lives in the target document ("customer.name",
  // "items.$[e].product.title" for array copies, "recentReviews" for recent).
  std::string target_path(const field_map& f) const;
  // The target paths this mapping writes (for overlap checks and `check`).
  std::vector<std::string> written_paths() const;
  // Source paths whose change can change the copies (fields, keys, filter).
  std::vector<std::string> watched_paths() const;
  const field_map* field_named(std::string_view n) const;
};

// The identifier the planner uses in arrayFilters for array copies.
inline constexpr std::string_view array_element_id = "e";

}  // namespace denormd::mapping
