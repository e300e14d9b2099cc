#pragma once
// MongoDB query-language evaluation over bson::document. Compiled once, evaluated many times.
// A compiled matcher is immutable and safe to share between threads.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace denormd::query {

// Which operators compile without an extension: the mapping language's (docs/mapping.schema.json):
// equality, $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $not.
enum class op_set {
  mapping_subset,
};

struct compile_error {
  std::string pointer;  // JSON pointer of the bad value, relative to the filter ("/a/$foo")
  std::string message;  // MongoDB-style text ("unknown operator: $foo")
  int code = 2;         // MongoDB error code (2 BadValue)
};

// A compiled operator from an extension: true when the whole document satisfies it.
class predicate {
 public:
  virtual ~predicate() = default;
  virtual bool matches(const bson::document& doc) const = 0;
  // Dotted paths it reads besides the field it was compiled for (a top-level operator's).
  virtual std::vector<std::string> paths() const { return {}; }
};
using predicate_ptr = std::shared_ptr<const predicate>;

// Operators beyond the mapping language, for a caller that needs more of MongoDB's query
// language (the test server in tests/emulator); denormd compiles without one. Stateless
// from the matcher's view: used only while compiling, from the compiling thread.
class operator_extension {
 public:
  virtual ~operator_extension() = default;
  // `{path: {op: arg}}`, `pointer` naming `op`; nullptr when `op` is not this extension's.
  virtual expected<predicate_ptr, compile_error> field_operator(
      const std::string& path, const std::string& op, const bson::value& arg,
      const std::string& pointer) const = 0;
  // Top-level `{op: arg}`; nullptr when `op` is not this extension's.
  virtual expected<predicate_ptr, compile_error> top_level_operator(
      const std::string& op, const bson::value& arg, const std::string& pointer) const = 0;
};

// How one operator of the mapping language ($eq $gt $gte $lt $lte $in) tests one value,
// without looking inside arrays, and whether it accepts a missing field. Extensions use them
// so that their operators agree with these.
bool test_value(std::string_view op, const bson::value& v, const bson::value& operand);
bool accepts_missing(std::string_view op, const bson::value& operand);
// Whether a query value is an operator document ({"$gt": 1}), not a value to compare with.
bool is_operator_document(const bson::value& v);

class matcher {
 public:
  static expected<matcher, compile_error> compile(const bson::document& filter,
                                                  op_set ops = op_set::mapping_subset);
  // The mapping language plus the operators `extension` compiles.
  static expected<matcher, compile_error> compile(const bson::document& filter,
                                                  const operator_extension& extension);
  matcher();  // matches everything

  bool matches(const bson::document& doc) const;

  // Top-level dotted paths the filter reads (deduplicated), e.g. {"status", "address.city"}.
  const std::vector<std::string>& paths() const { return paths_; }
  // The filter as given.
  const bson::document& filter() const { return filter_; }
  // Top-level `field: value` and `field: {$eq: value}` predicates (for upsert seeding and
  // index lookups), in filter order; descends into $and.
  std::vector<std::pair<std::string, bson::value>> equalities() const;

  struct node;  // implementation detail

 private:
  static expected<matcher, compile_error> compile_with(const bson::document& filter,
                                                       const operator_extension* extension);

  std::shared_ptr<const node> root_;
  std::vector<std::string> paths_;
  bson::document filter_;
};

// `filter`'s top-level `field: value` and `field: {$eq: value}` predicates, in filter order,
// descending into $and (what matcher::equalities gives for a compiled filter).
std::vector<std::pair<std::string, bson::value>> equalities_of(const bson::document& filter);

// True when two dotted paths overlap: one is a prefix of the other at a component boundary
// ("address" and "address.city" overlap; "address" and "addresses" do not).
bool paths_overlap(std::string_view a, std::string_view b);

}  // namespace denormd::query
