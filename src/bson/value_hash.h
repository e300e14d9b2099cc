#pragma once
// Hashing consistent with MongoDB's value equality (compare(a, b) == 0): numbers hash by
// numeric value whatever their type (1, Int64(1), 1.0 and Decimal128 "1.00" alike), strings
// with symbols, documents and arrays by content. For unordered containers keyed by values
// (the coalescer's parents, the test server's `_id` index). Stateless.

#include <cstddef>

#include "bson/value.h"

namespace denormd::bson {

struct value_hash {
  std::size_t operator()(const value& v) const;
};

struct value_equal {
  bool operator()(const value& a, const value& b) const { return compare(a, b) == 0; }
};

}  // namespace denormd::bson
