#pragma once
// The subset of MongoDB's aggregation expressions the emulator evaluates: field paths
// ("$a.b", arrays traversed), $$ROOT / $$CURRENT / $$REMOVE, {$literal: v}, constants, and
// documents and arrays of expressions. Any other operator is rejected at parse time with
// MongoDB's code (168 InvalidPipelineOperator). Lifecycle: parsed once, immutable; safe to share.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class expression {
 public:
  static denormd::expected<expression> parse(const denormd::bson::value& spec);
  // A constant (a non-string, non-document, non-array value).
  static expression constant(denormd::bson::value v);

  // The value for `root`, or nullopt when it is missing (the field is then left out).
  std::optional<denormd::bson::value> evaluate(const denormd::bson::document& root) const;

  struct node;

 private:
  std::shared_ptr<const node> root_;
};

// Validates a field path as MongoDB's FieldPath does ("a.b"; no empty parts, no leading `$`).
denormd::status check_field_path(const std::string& path);

// The value at an aggregation field path: arrays are traversed element by element, documents
// inside them contribute, other elements are skipped.
std::optional<denormd::bson::value> value_at_path(const denormd::bson::value& v,
                                                  const std::vector<std::string>& parts,
                                                  std::size_t from = 0);

}  // namespace mongo_emulator::engine
