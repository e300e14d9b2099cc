#pragma once
// Options mongo-emulator does not implement. They are refused (238 NotImplemented) rather than
// accepted and ignored, because ignoring one makes a test pass that fails on MongoDB: collations
// other than simple, views, schema validators, time series, clustered and encrypted
// collections. Stateless.

#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// Success, or the refusal naming the option, where it was given and its value.
denormd::status refuse_unsupported_options(std::string_view command, const bson::document& body);

}  // namespace mongo_emulator
