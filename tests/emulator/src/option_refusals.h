#pragma once
// Options mongo-emulator does not implement. They are refused (238 NotImplemented) rather than
// accepted and ignored, because ignoring one makes a test pass that fails on MongoDB:
// transactions, collations other than simple, views, schema validators, capped, time series,
// clustered and encrypted collections, tailable cursors and the other find and collMod options
// it does not have. Also, as MongoDB's IDL parsers do, unknown fields of create, collMod and
// find (40415). Stateless.

#include <optional>
#include <string>
#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// The arguments every command accepts (MongoDB 6.0's generic_argument.idl): the IDL parsers let
// them through whatever the command.
bool is_generic_argument(std::string_view name);

// Success, or the refusal naming the option, where it was given and its value. Runs before
// the command, so a refused command changes nothing.
denormd::status refuse_unsupported_options(std::string_view command, const bson::document& body);

// A command's readConcern as MongoDB's ReadConcernArgs parses it (read_concern_args.cpp): an
// object of `level`, `afterClusterTime`, `atClusterTime`, `afterOpTime`, `provenance`; errors
// 9 (not an object, unknown level), 14 (wrong field type), 72 (other option, bad combination).
struct read_concern {
  std::optional<std::string> level;  // as given; absent means the implicit default (local)
  std::optional<bson::timestamp> at_cluster_time;
  bool snapshot() const { return level == "snapshot"; }
};
denormd::expected<read_concern> parse_read_concern(const bson::document& body);

// The time a snapshot read (find, aggregate) reads at: `now`, the storage's cluster time under
// the read's lock. A client's atClusterTime must equal it: a later one fails as on MongoDB (72);
// an earlier one is refused (238), as the emulator keeps no history to read the past from.
denormd::expected<bson::timestamp> snapshot_read_time(std::string_view command,
                                                      const read_concern& rc, bson::timestamp now);

}  // namespace mongo_emulator
