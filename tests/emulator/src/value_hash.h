#pragma once
// Hashing consistent with MongoDB's value equality (bson::compare(a, b) == 0): numbers hash by
// numeric value whatever their type, documents and arrays by content. For unordered
// containers keyed by `_id`. Stateless.

#include <cstddef>

#include "bson/value.h"

namespace mongo_emulator {

struct value_hash {
  std::size_t operator()(const denormd::bson::value& v) const;
};

struct value_equal {
  bool operator()(const denormd::bson::value& a, const denormd::bson::value& b) const {
    return denormd::bson::compare(a, b) == 0;
  }
};

}  // namespace mongo_emulator
