#pragma once
// MongoDB query-language evaluation over bson::document. Compiled once, evaluated many times.
// A compiled matcher is immutable and safe to share between threads.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace denormd::query {

// Which operators compile. The mapping language allows a subset (DESIGN §2); the test
// server allows everything implemented here.
enum class op_set {
  mapping_subset,  // equality, $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $not
  full,            // the above plus $nor $elemMatch $size $type $all
};

struct compile_error {
  std::string pointer;  // JSON pointer of the bad value, relative to the filter ("/a/$foo")
  std::string message;  // MongoDB-style text ("unknown operator: $foo")
  int code = 2;         // MongoDB error code (2 BadValue)
};

// What a successful match reports beyond yes/no: the index of the array element that made
// the first array-traversing predicate match (the positional `$` update operator uses it).
struct match_details {
  std::optional<std::size_t> array_index;
};

class matcher {
 public:
  static expected<matcher, compile_error> compile(const bson::document& filter,
                                                  op_set ops = op_set::full);
  matcher();  // matches everything

  bool matches(const bson::document& doc, match_details* details = nullptr) const;

  // Top-level dotted paths the filter reads (deduplicated), e.g. {"status", "address.city"}.
  const std::vector<std::string>& paths() const { return paths_; }
  // The filter as given.
  const bson::document& filter() const { return filter_; }
  // Top-level `field: value` and `field: {$eq: value}` predicates (for upsert seeding and
  // index lookups), in filter order; descends into $and.
  std::vector<std::pair<std::string, bson::value>> equalities() const;

  struct node;  // implementation detail

 private:
  std::shared_ptr<const node> root_;
  std::vector<std::string> paths_;
  bson::document filter_;
};

// True when two dotted paths overlap: one is a prefix of the other at a component boundary
// ("address" and "address.city" overlap; "address" and "addresses" do not).
bool paths_overlap(std::string_view a, std::string_view b);

}  // namespace denormd::query
