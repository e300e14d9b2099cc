#pragma once
// Backfill: brings the dependents of some mappings in line with their sources, from scratch.
// A copy mapping walks its source collection and writes, for each document, exactly what
// the planner plans for a fresh insert of it; a recent mapping walks its parent collection
// and refills each parent's array from the children (the writer's refill). Documents are
// walked in _id order, streamed, one ordered bulk per batch; after each batch the progress
// is stored in `<meta_db>.denormd_backfill` ({_id: mapping name, lastKey, done, startedAt,
// updatedAt, documents, fingerprint}), so a backfill that was stopped or killed continues
// after `lastKey`. A finished mapping (done: true), or one whose definition changed since,
// starts over when it is backfilled again. A copy mapping with onSourceDelete "unset" then
// walks its targets too (ops/orphan_sweep.h: copies of sources that no longer exist are
// unset), with `phase: "targets"` and the target's _id as lastKey in the stored progress.
//
// Lifecycle: construct, call run() (from any thread; one run at a time per instance), and
// stop it from elsewhere through the stop_token. The connection, planner and metrics it is
// given are thread-safe and must outlive it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/commands/progress_line.h"

namespace denormd::ops {

inline constexpr const char* backfill_collection = "denormd_backfill";
// Where the daemon records the mappings it runs (ops/services/mapping_versions.h).
inline constexpr const char* mappings_collection = "denormd_mappings";

// The activation of mapping `name` under `fingerprint`: how many times a definition of it
// became active (recorded with it in denormd_mappings by the daemon), so that a backfill of
// a definition put back (A, then B, then A again) is told from one of its earlier time. 0 when
// it is not recorded under that fingerprint.
mongo::result<std::int64_t> activation_of(mongo::connection& conn, const std::string& meta_db,
                                          const std::string& name, const std::string& fingerprint);

struct backfill_options {
  std::size_t batch_size = 500;  // source (copy) or parent (recent) documents per batch
  // recent: a batch's parents are refilled by this many threads at once (a refill costs two
  // round trips per parent; a copy batch is one bulk write and needs no help).
  std::size_t refill_threads = 4;
  bool dry_run = false;  // log the writes instead of sending them; store no progress
  bool restart = false;  // start over even where an unfinished backfill could continue
  // How long transient failures (network, election) may go on before run() gives up with
  // the last one; zero retries for as long as it takes.
  std::chrono::milliseconds give_up_after{std::chrono::minutes(5)};
  // Called after every batch and when a mapping is done, on run()'s thread. Without it (or
  // with log_progress), run() logs a progress line every `log_interval`.
  std::function<void(const backfill_progress&)> on_progress;
  bool log_progress = false;
  std::chrono::milliseconds log_interval{std::chrono::seconds(5)};
};

struct mapping_backfill {
  std::string mapping;
  std::uint64_t documents = 0;      // walked in total, including the runs this one continued
  std::uint64_t run_documents = 0;  // walked by this run
  std::optional<bson::value> resumed_after;  // the lastKey this run continued after
  bool resumed_in_targets = false;           // ... in the walk of the targets (orphan sweep)
  std::uint64_t run_targets = 0;             // targets walked by this run's orphan sweep
  std::uint64_t orphans_unset = 0;           // targets whose copies of a gone source it unset
  bool done = false;
};

struct backfill_outcome {
  std::vector<mapping_backfill> mappings;  // in the order given, up to where it stopped
  bool complete = false;  // false: stopped on request before the end (progress is stored)
};

class backfiller {
 public:
  backfiller(mongo::connection& conn, const mapping::planner& planner, metrics::metrics& m,
             std::string meta_db);

  // Backfills `which` (mappings owned by the planner) one after the other. Errors that are
  // not transient, and transient ones that outlast give_up_after, end the run.
  mongo::result<backfill_outcome> run(const std::vector<const mapping::mapping*>& which,
                                      const backfill_options& opts, std::stop_token stop);

 private:
  // Where a run of a mapping stands: the last _id written (of a source, or of a target while
  // sweeping), and when the run began.
  struct position {
    std::optional<bson::value> last_key;
    std::int64_t started_ms = 0;
    bool sweeping = false;        // the sources are done; walking the targets (orphan_sweep)
    std::uint64_t targets = 0;    // targets the sweep walked so far
    std::int64_t activation = 0;  // the mapping's activation this backfill runs for
  };
  // The stored position of an unfinished run of the same definition, or a fresh one.
  mongo::result<position> resume_point(const mapping::mapping& m, const std::string& fingerprint,
                                       const backfill_options& opts, bool first_attempt,
                                       mapping_backfill& out);
  // The documents walked so far, of how many the walked collection held at the start.
  struct walked_count {
    std::uint64_t documents = 0;
    std::optional<std::uint64_t> total;
  };
  mongo::status save_progress(const mapping::mapping& m, const std::string& fingerprint,
                              const mapping::ns& walked, const position& at, bool done,
                              walked_count walked_so_far, const backfill_options& opts);
  // One attempt: from the stored progress to the end, or to the first failure.
  mongo::status backfill_one(const mapping::mapping& m, const backfill_options& opts,
                             bool first_attempt, std::chrono::steady_clock::time_point began,
                             std::stop_token& stop, mapping_backfill& out);
  // One attempt's state while it runs (in the .cc).
  struct walk_state;
  mongo::status save(walk_state& a, bool done);
  // The walk of the sources, in _id order after the stored key; then, for a copy that sweeps,
  // the start of the sweep (stored). False: stopped on request.
  mongo::result<bool> walk_sources(walk_state& a, std::stop_token& stop);
  // The sweep of the targets (orphan_sweep). False: stopped on request.
  mongo::result<bool> walk_targets(walk_state& a, std::stop_token& stop);
  // Walks `ns` in _id order from `filter` (after a.at.last_key), `handle` writing each batch,
  // and stores the progress after each (not after one a stop cut short). False: stopped on
  // request.
  using batch_handler = std::function<mongo::status(std::vector<bson::document>&)>;
  mongo::result<bool> walk_phase(walk_state& a, const mapping::ns& ns, const bson::document& filter,
                                 const mongo::find_options& find, const batch_handler& handle,
                                 std::stop_token& stop);
  // `handle` wrote a batch of `n` documents ending with _id `last`: counts and stores it.
  mongo::status batch_written(walk_state& a, bson::value last, std::size_t n);
  // The writes for one batch of walked documents, by kind (consumes `batch`).
  mongo::result<std::vector<mapping::write_op>> plan_batch(const mapping::mapping& m,
                                                           std::vector<bson::document>& batch,
                                                           const backfill_options& opts) const;
  mongo::result<std::vector<mapping::write_op>> plan_copies(
      const mapping::mapping& m, std::vector<bson::document>& batch) const;
  // The parents of `batch` in one contiguous share per refill thread, one `make` op each
  // (recent's refills, aggregate's recomputes).
  std::vector<mapping::write_op> plan_parent_shares(
      const std::vector<bson::document>& batch, const backfill_options& opts,
      const std::function<mapping::write_op(bson::document)>& make) const;
  mongo::status apply_batch(const mapping::mapping& m, const std::vector<mapping::write_op>& ops,
                            const backfill_options& opts);
  // Plans, writes and (copy) rechecks one batch of walked documents.
  mongo::status write_batch(const mapping::mapping& m, bool recheck_sources,
                            std::vector<bson::document>& batch, const mongo::find_options& find,
                            const backfill_options& opts, std::stop_token& stop);
  // Orphan sweep: unsets the copies of gone sources in one batch of targets, then reads
  // those sources again and writes the copies of any inserted meanwhile.
  mongo::status sweep_batch(const mapping::mapping& m, const mapping::copy_kind& kind,
                            std::vector<bson::document>& batch, const mongo::find_options& find,
                            const backfill_options& opts, mapping_backfill& out,
                            std::stop_token& stop);
  // Copy: reads the sources of `written` (as they were read for the batch just written)
  // again, and writes those changed since, until none did or `stop` is requested.
  mongo::status recheck_copies(const mapping::mapping& m, std::vector<bson::document> written,
                               const mongo::find_options& find, const backfill_options& opts,
                               std::stop_token& stop);

  mongo::connection& conn_;
  const mapping::planner& planner_;
  metrics::metrics& metrics_;
  std::string meta_db_;
};

// How many documents `ns` holds (the server's count, from its metadata); nullopt when it
// does not answer.
std::optional<std::uint64_t> count_documents(mongo::connection& conn, const mapping::ns& ns);

// The parents of one refill: the _ids of a contiguous run of the walk, in _id order.
bson::document parents_filter(bson::array ids);

}  // namespace denormd::ops
