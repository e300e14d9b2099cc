#pragma once
// The computed fields of some mappings (those reading one source namespace, or one mapping),
// as the server is asked to evaluate them: one entry per distinct expression, the mappings
// and fields that use it, the parts of a document it reads, and the $project document that
// computes every value. Pure; built once per planner or mapping, immutable, shareable.
// docs/architecture.md, "Computed fields".

#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/change_event.h"
#include "mapping/fwd.h"

namespace denormd::mapping {

class computed_expression;

class computed_fields {
 public:
  struct owner {
    const mapping* m = nullptr;
    std::string field;
  };
  struct entry {
    const computed_expression* expression = nullptr;
    std::vector<owner> owners;
  };

  computed_fields() = default;
  explicit computed_fields(std::span<const mapping* const> mappings);

  bool empty() const { return entries_.empty(); }
  const std::vector<entry>& entries() const { return entries_; }
  const entry* find(std::string_view key) const;

  // The $project document computing every entry ({_id: 0, <key>: <expression>, ...}), or
  // only `keys`; the server's reply holds one document per input, in input order.
  bson::document projection() const;
  bson::document projection(std::span<const std::string> keys) const;
  // What of `doc` the server is sent: its _id and the top-level fields the expressions read,
  // or all of it when one reads $$ROOT/$$CURRENT. Never a value read from the document as a
  // name: only the mapping's own paths select.
  bson::document input(const bson::document& doc) const;
  bool reads_whole_document() const { return whole_; }
  // The top-level fields the expressions read (besides _id), when not the whole document.
  const std::vector<std::string>& top_fields() const { return top_fields_; }
  // An aggregation expression true for a document whose input() is `input`: the same _id and
  // read fields, or the same whole document (compared as $eq compares), so that a document
  // changed since can be told apart. `input` is data: it goes in as {$literal}.
  bson::document same_input(const bson::document& input) const;
  // Sets `doc`'s computed_root to `values` (the server's reply for it), replacing what was
  // there; a failed expression is simply absent, so its field is written as missing.
  static void put(bson::document& doc, bson::document values);

  // The dead-letter reason for `failure` of `doc_id` for `field` of a mapping.
  static std::string failure_reason(const std::string& field, const bson::value& doc_id,
                                    const computed_failure& failure);

 private:
  std::vector<entry> entries_;
  std::vector<std::string> top_fields_;
  bool whole_ = false;
};

}  // namespace denormd::mapping
