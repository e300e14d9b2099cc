#pragma once
// Where a source's position is kept: the resume token after which everything is applied.
// checkpoint_store keeps it in MongoDB; tests use fakes. An applier calls one from its
// thread only; implementations say their own thread-safety.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/ns.h"
#include "mapping/reload_policy.h"
#include "mongo/driver_error.h"

namespace denormd::checkpoint {

// A mapping that no longer reads the namespace, and where it stopped (everything up to `token`
// was applied for it). Kept with the namespace's checkpoint, the one record of it, so that it
// moves with the namespace (with --ha, with its lease): whichever pipeline of the namespace
// starts with the mapping put back with the same `fingerprint` replays from there
// (docs/architecture.md, "Mappings put back").
using mapping::stopped_mapping;

struct checkpoint {
  bson::document token;
  std::int64_t event_ms = 0;  // wall time of the last applied event (0 when unknown)
  std::int64_t saved_ms = 0;  // when it was stored
  // The cluster time of the event the token names; none for a high-water-mark token (which
  // names no event) or when unknown.
  std::optional<bson::timestamp> event_time;
  // The server-side filter of the stream the token came from, as JSON ("" for none). A stream
  // with another filter cannot resume from an event token its filter drops.
  std::string filter;
  // With --ha: the epoch of the lease the writer holds. The store refuses the save when the
  // stored checkpoint carries a newer one (another instance took the namespace over).
  std::int64_t lease_epoch = 0;
  // The mappings that stopped reading the namespace. A save writes them only when set (an
  // empty list removes them), with the token; a pipeline's saves leave them as they are.
  std::optional<std::vector<stopped_mapping>> stopped = std::nullopt;
};

class position_store {
 public:
  virtual ~position_store() = default;

  virtual mongo::result<std::optional<checkpoint>> load(const mapping::ns& source) = 0;
  // Only after every write up to `cp.token` was acknowledged.
  virtual mongo::status save(const mapping::ns& source, const checkpoint& cp) = 0;

 protected:
  position_store() = default;
  position_store(const position_store&) = default;
  position_store& operator=(const position_store&) = default;
};

}  // namespace denormd::checkpoint
