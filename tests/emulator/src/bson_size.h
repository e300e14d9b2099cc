#pragma once
// The encoded BSON size of a value tree, computed without encoding it (for batch size limits).
// Stateless.

#include <cstddef>

#include "bson/value.h"

namespace mongo_emulator {

std::size_t bson_size(const denormd::bson::document& d);
std::size_t bson_size(const denormd::bson::value& v);

}  // namespace mongo_emulator
