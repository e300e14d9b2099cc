#pragma once
// Computed fields on the documents the commands read from a mapping's source (backfill,
// verify, the orphan sweep): the server evaluates them as the daemon's stream has it
// (sink::computed_evaluator), so each command writes and compares the same values.
// docs/architecture.md, "Computed fields". Stateless functions.

#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mongo/document_client.h"
#include "sink/computed_evaluator.h"

namespace denormd::ops {

// Puts `m`'s computed values into `docs` (read from m.source); what failed, per document
// index (those fields stay absent). Nothing to do, and no round trip, without computed fields.
mongo::result<std::vector<sink::computed_evaluator::failure>> compute_fields(
    mongo::document_client& conn, const mapping::mapping& m, std::span<bson::document> docs);

// Adds to `projection` the top-level fields of a source document that `m`'s fields read
// (a computed field: those its expression reads); false when one reads the whole document,
// so no projection may be used.
bool project_field_sources(bson::document& projection, const mapping::mapping& m);

}  // namespace denormd::ops
