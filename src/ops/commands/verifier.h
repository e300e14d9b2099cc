#pragma once
// `denormd verify` as a library: for each mapping, walks the dependents in _id order in
// batches (copy: the targets matching `where`; recent: the parents), looks their sources up
// in batches ($in of the keys; a recent parent's children with one limited query each), and
// compares with the planner's semantics (ops/drift.h). With `repair`, the drifted dependents
// get exactly the writes the planner plans for their sources, narrowed to their _id, through
// the writer; a copy repair then reads its sources again and rewrites those changed
// meanwhile, until none did, so that a newer value the stream applied between the read and
// the write is never left overwritten (docs/architecture.md, "Fills and backfills race the
// source's own stream"). Memory stays bounded by the batch size.
//
// Lifecycle: construct, call run() from any thread (one run at a time per instance); the
// connection, planner and metrics must outlive it and are thread-safe.

#include <cstddef>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/commands/verify_report.h"
#include "sink/writer.h"

namespace denormd::ops {

struct verify_options {
  std::size_t batch_size = 500;
  std::size_t max_examples = 10;  // per mapping, for drift and for missing sources each
  bool repair = false;
  // With repair: log the writes instead of sending them (none counts as repaired).
  bool dry_run = false;
  // Only the dependents whose _id is one of these (matched literally), when set: a re-check.
  std::optional<bson::array> only_ids;
  // Called with every drifted dependent, as read (the examples keep only the first few).
  std::function<void(const mapping::mapping&, const drift_example&, const bson::document&)>
      on_drift;
  // Called after each batch with the dependents it held, on the walking thread; false stops
  // the walk as a stop request does (the background verify paces its reads with it).
  std::function<bool(std::size_t)> after_batch;
};

class verifier {
 public:
  verifier(mongo::connection& conn, const mapping::planner& planner, metrics::metrics& m,
           std::string meta_db);

  mongo::result<verify_report> run(const std::vector<const mapping::mapping*>& which,
                                   const verify_options& opts, std::stop_token stop);

 private:
  mongo::status verify_copy(const mapping::mapping& m, const mapping::copy_kind& k,
                            const verify_options& opts, std::stop_token& stop, mapping_report& out);
  // One copy repair: the target, the source key and the source it was planned from (none:
  // the source is gone).
  struct written_copy {
    bson::value id;
    bson::value key;
    std::optional<bson::document> source;
  };
  // Reads the sources of `written` again and rewrites the targets of those changed since,
  // until none did.
  mongo::status rewrite_changed(const mapping::mapping& m, const mapping::copy_kind& kind,
                                std::vector<written_copy> written,
                                const mongo::find_options& sources, sink::writer& writer);
  mongo::status verify_recent(const mapping::mapping& m, const mapping::recent_kind& k,
                              const verify_options& opts, std::stop_token& stop,
                              mapping_report& out);
  // Compares each parent with a fresh aggregation of its children (one per batch).
  mongo::status verify_aggregate(const mapping::mapping& m, const mapping::aggregate_kind& k,
                                 const verify_options& opts, std::stop_token& stop,
                                 mapping_report& out);
  // The aggregation over the children of `keys`, leaving out the values of children on which
  // an expression fails (added to `failing`, as the daemon leaves them out); nullopt when the
  // server refuses it and the children that fail cannot be told apart (or are too many).
  mongo::result<std::optional<std::vector<bson::document>>> group_leaving_out_failures(
      const mapping::mapping& m, const mapping::aggregate_kind& k, const bson::array& keys,
      std::vector<mapping::failing_child>& failing);
  static void note_failing(const std::vector<mapping::failing_child>& failing,
                           const verify_options& opts, mapping_report& out);
  static void note_unverifiable(const bson::value& parent, const std::string& why,
                                const verify_options& opts, mapping_report& out);
  mongo::connection& conn_;
  const mapping::planner& planner_;
  metrics::metrics& metrics_;
  std::string meta_db_;
};

}  // namespace denormd::ops
