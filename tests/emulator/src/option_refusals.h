#pragma once
// Options mongo-emulator does not implement. They are refused (238 NotImplemented) rather than
// accepted and ignored, because ignoring one makes a test pass that fails on MongoDB:
// transactions, collations other than simple, views, schema validators, capped, time series,
// clustered and encrypted collections, tailable cursors and the other find and collMod options
// it does not have. Also, as MongoDB's IDL parsers do, unknown fields of create, collMod and
// find (40415). Stateless.

#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// Success, or the refusal naming the option, where it was given and its value. Runs before
// the command, so a refused command changes nothing.
denormd::status refuse_unsupported_options(std::string_view command, const bson::document& body);

}  // namespace mongo_emulator
