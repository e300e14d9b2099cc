#pragma once
// Which definition of each mapping the stream of each namespace plans with, in
// `<meta db>.denormd_streamed` {_id: "shop.customers", mappings: {name: fingerprint}}: written
// by the instance that starts the namespace's pipeline (at start, at a reload's hand-over, and
// with --ha when it takes the lease), read by the automatic backfill. A backfill of a new or
// changed mapping must not read its documents before every namespace the mapping reads is
// streamed with that definition: a change applied with the old one after the backfill's read
// (with --ha, by an instance that has not reloaded yet) would never reach the new definition
// (docs/architecture.md, "Reloads with --ha"). Stateless; thread-safe.

#include <string>
#include <vector>

#include "mapping/planner.h"
#include "mapping/reload_policy.h"
#include "mongo/document_client.h"

namespace denormd::ops {

inline constexpr const char* streamed_collection = "denormd_streamed";

// The namespaces `m` reads: its source, and the target it fills (mapping/reload_policy.h).
using mapping::reads_of;

// Records that the pipeline of `source` plans with `p`'s mappings from now on.
mongo::status record_streamed(mongo::document_client& conn, const std::string& meta_db,
                              const mapping::ns& source, const mapping::planner& p);

// "unit (mapping)" for each stream of a namespace one of `which` reads that does not plan with
// that mapping's definition (yet), as `records` (documents of the collection) say. `units`: the
// watched units (planner::watched_namespaces), so that a partitioned namespace counts only once
// every one of its partitions does. Pure.
std::vector<std::string> not_streamed(const std::vector<const mapping::mapping*>& which,
                                      const std::vector<bson::document>& records,
                                      const std::vector<mapping::ns>& units = {});

// The same, read from the collection.
mongo::result<std::vector<std::string>> not_streamed(
    mongo::document_client& conn, const std::string& meta_db,
    const std::vector<const mapping::mapping*>& which, const std::vector<mapping::ns>& units);

}  // namespace denormd::ops
