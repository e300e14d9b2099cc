#pragma once
// The backfill's second phase for a copy mapping with onSourceDelete "unset": targets that
// still hold copies of a source that no longer exists get them unset, as the source's delete
// event would have. The first phase walks the sources, so it never sees these: a source
// deleted while the stream could not see it (lost history, a mapping added or changed since)
// or a target re-keyed to a missing source. The sweep walks the targets inside `where` that
// hold a copy, in _id order, and reads their sources per batch (docs/architecture.md,
// "Correctness"). Under "keep" copies of deleted sources stay by design, and targets outside
// `where` keep their snapshot, so neither is swept. Pure, except read_sources().

#include <map>
#include <vector>

#include "bson/value.h"
#include "mapping/copy_kind.h"
#include "mapping/planner.h"
#include "mongo/connection.h"
#include "ops/commands/drift.h"

namespace denormd::ops {

// Source documents by their key, as MongoDB compares keys.
using source_map = std::map<bson::value, bson::document, value_less>;

// The sources a batch of copy targets references (one query: $in of their keys, matched
// literally, never an array holding a key). A non-unique source key: the first document wins.
mongo::result<source_map> read_sources(mongo::connection& conn, const mapping::mapping& m,
                                       const mapping::copy_kind& kind,
                                       const std::vector<bson::document>& targets,
                                       const mongo::find_options& projection);

// The sources whose key is one of `keys` (each one a referenced_keys() key), one query.
mongo::result<source_map> read_source_keys(mongo::connection& conn, const mapping::mapping& m,
                                           const mapping::copy_kind& kind, const bson::array& keys,
                                           const mongo::find_options& projection);

// What a copy target is read with (verify, the sweep): its _id, its key and its copies.
bson::document copy_target_projection(const mapping::mapping& m, const mapping::copy_kind& kind);

// What the source with key `key` writes under `m` (nullptr: a source that is gone, as its
// delete plans it), the mapping's updates only.
std::vector<mapping::write_op> plan_source(const mapping::planner& planner,
                                           const mapping::mapping& m, const mapping::copy_kind& k,
                                           const bson::value& key, const bson::document* source);

class orphan_sweep {
 public:
  // The copy kind of `m` when its backfill sweeps (onSourceDelete "unset"), else nullptr.
  static const mapping::copy_kind* kind_of(const mapping::mapping& m);

  // `m` and `kind` must outlive the sweep.
  orphan_sweep(const mapping::planner& planner, const mapping::mapping& m,
               const mapping::copy_kind& kind);

  // The targets the sweep walks (after `after`, an _id, when given): inside `where`, holding
  // at least one copy.
  bson::document filter(const std::optional<bson::value>& after) const;

  struct plan_result {
    std::vector<mapping::write_op> ops;  // one unset per target and missing key
    bson::array keys;                    // the missing keys unset, each once
    std::uint64_t targets = 0;           // the targets written
  };
  // The unsets for the targets of `batch` that hold copies of a source `sources` lacks, each
  // narrowed to its target (the rest of the planned filter still applies: the key, `where`).
  plan_result plan(const std::vector<bson::document>& batch,
                   const mapping::source_lookup& sources) const;

 private:
  const mapping::planner& planner_;
  const mapping::mapping& m_;
  const mapping::copy_kind& kind_;
};

}  // namespace denormd::ops
