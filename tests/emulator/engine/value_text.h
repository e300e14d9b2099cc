#pragma once
// MongoDB's server-side text form of BSON values (BSONElement::toString), as it appears inside
// update error messages: `{_id: 1}`, `a: [ 1, 2.0 ]`, `{ $set: { a.$[i]: 5.0 } }`.
// Stateless functions.

#include <string>
#include <string_view>

#include "bson/value.h"

namespace mongo_emulator::engine {

// `value` alone: `1`, `"x"`, `{ a: 1 }`, `[ 1, 2 ]`, `{}`.
std::string value_text(const denormd::bson::value& v);
// `name: value`, the form MongoDB prints for an element.
std::string element_text(std::string_view name, const denormd::bson::value& v);
// `{ a: 1, b: "x" }`.
std::string document_text(const denormd::bson::document& d);
// A double as MongoDB prints it (`%.16g`, with `.0` added to integral values).
std::string double_text(double d);

}  // namespace mongo_emulator::engine
