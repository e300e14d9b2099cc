#pragma once
// MongoDB's server-side text form of BSON values, as it appears in error messages such as
// "dup key: { _id: 1 }". Stateless.

#include <string>

#include "bson/value.h"

namespace mongo_emulator {

std::string format_value(const denormd::bson::value& v);
std::string format_document(const denormd::bson::document& d);

}  // namespace mongo_emulator
