#pragma once
// The typed, validated form of one mapping file (docs/architecture.md, "Mapping kinds"): the
// settings every kind has, and the kind itself, which holds its own settings and knows how to
// read, plan, complete, describe and verify them. Built by config/mapping_loader; immutable
// afterwards and safe to share between threads.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mapping/aggregate_kind.h"
#include "mapping/copy_kind.h"
#include "mapping/ns.h"
#include "mapping/recent_kind.h"

namespace denormd::mapping {

// Every kind of mapping. Adding one: a new `<name>_kind.{h,cc}` meeting the contract in
// kind_contract.h (checked there for every alternative), and its type here. The coalescer and
// the writer reach a kind only through that contract; the few commands that handle each kind
// in its own way (verify, backfill) visit with one arm per kind, so a new kind that lacks an
// arm does not compile.
using any_kind = std::variant<copy_kind, recent_kind, aggregate_kind>;

enum class delete_policy {
  keep,             // copy: leave the copies as they are
  unset,            // copy: remove the copied fields
  pull,             // recent: remove the element
  pull_and_refill,  // recent: remove the element and refill the array from the children
  recompute         // aggregate: recompute the parent the child leaves
};

// One copied field: `name` under `into` in the target, read from `source_path` (aggregate:
// the accumulator's child path, "" for $count). A computed field is the server's value of
// `computed`: its `source_path` is where that value sits in a document once evaluated
// (computed_expression::value_path), and the paths it watches are those the expression reads.
struct field_map {
  std::string name;
  std::string source_path;
  std::shared_ptr<const computed_expression> computed;
};

// An index a mapping's reads and writes want (`denormd check` lists them).
struct index_need {
  ns where;
  std::string keys;  // the key document as JSON
  std::string why;
};

struct mapping {
  std::string name;
  std::string file;  // where it was loaded from, for messages
  std::string description;
  ns source;
  ns target;
  std::string into;  // copy: optional prefix of the copied fields; recent: the array field
  std::vector<field_map> fields;
  delete_policy on_source_delete = delete_policy::keep;
  bool fill_new_targets = false;
  any_kind kind;

  std::string_view kind_name() const;
  // The target paths this mapping writes (for overlap checks and `check`).
  std::vector<std::string> written_paths() const;
  // Source paths whose change can change the dependents (fields, keys, filter; a computed
  // field's: the paths its expression reads, or whole_document_path).
  std::vector<std::string> watched_paths() const;
  bool has_computed_fields() const;
  const field_map* field_named(std::string_view n) const;
  // A digest of everything that decides what the mapping writes (16 hex digits): a backfill's
  // stored progress, or a running pipeline, belongs to one definition.
  std::string fingerprint() const;
  // Calls `f(kind)` with the mapping's kind as its own type.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), kind);
  }
  // The kind as K, or nullptr (tests, and a kind's own files; the daemon visits instead).
  template <class K>
  const K* as() const {
    return std::get_if<K>(&kind);
  }
};

// Calls `f.template operator()<K>()` for every kind K, in the order of any_kind.
template <class F>
void for_each_kind(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f.template operator()<std::variant_alternative_t<I, any_kind>>(), ...);
  }
  (std::make_index_sequence<std::variant_size_v<any_kind>>{});
}

// The identifier the planner uses in arrayFilters for array copies.
inline constexpr std::string_view array_element_id = "e";

}  // namespace denormd::mapping
