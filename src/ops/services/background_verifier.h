#pragma once
// The background verify of `denormd run --verify-interval` (docs/operations.md, "Background
// verify"): on a thread of its own, one full pass over every mapping's dependents per interval,
// its reads spread evenly over the interval (paced by the documents the targets held at the
// pass's start), through the `denormd verify` machinery (ops/verifier.h).
//
// A dependent found differing is only a suspect: its source may have changed and the stream
// not applied it yet. So each suspect is read again once the stream has applied every change
// up to a cluster time taken after the previous read, `confirm_rounds` times. A change that was
// in flight has then been written to it: the stream rewrote it. Only a suspect that still
// differs and was not rewritten in any round is drift: nothing the stream applied since the
// first read touched it, so the difference is not one the stream is about to close. (A
// dependent the stream keeps rewriting, say a busy parent's array, is therefore never
// counted while it is busy, drifted or not; the stream's own writes refresh it.) Drift is counted
// (denormd_drift_found_total) and logged with the mapping, the _id and the fields once while it
// stays drifted, and repaired (unless told not to) by the verifier's repair, which itself guards
// against the stream writing between its read and its write.
//
// A mapping is verified only where its source is streamed (with --ha: by the instance holding
// that namespace's lease), with the definition this process runs, and not while its automatic
// backfill is pending or running (its dependents are expected to differ then).
//
// Lifecycle: start() once, stop() (or the destructor) joins within one server call; pass()
// runs one pass on the caller's thread, for tests, and must not overlap the thread's. The
// connection, the metrics and whatever the callbacks read must outlive it.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "bson/value.h"
#include "mapping/planner.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"
#include "ops/commands/drift.h"

namespace denormd::ops {

struct background_verify_options {
  std::chrono::milliseconds interval{600000};  // one full pass per interval
  bool repair = true;                          // false: --verify-no-repair
  std::size_t batch_size = 100;                // dependents per read
  int confirm_rounds = 2;                      // comparisons after the stream applied past a read
  // How long a confirmation waits for the stream; a stream further behind leaves the suspects
  // to the next pass, uncounted.
  std::chrono::milliseconds settle_timeout{30000};
};

// The running mapping set (a reload replaces it). Any thread.
using planner_fn = std::function<std::shared_ptr<const mapping::planner>()>;
// The cluster time through which every change `m` reads is applied, when this instance streams
// its source; nullopt: not this instance's to verify. Any thread.
using applied_fn = std::function<std::optional<bson::timestamp>(const mapping::mapping& m)>;

class background_verifier {
 public:
  background_verifier(mongo::connection& conn, metrics::metrics& m, std::string meta_db,
                      planner_fn planner, applied_fn applied, background_verify_options opts);
  ~background_verifier();
  background_verifier(const background_verifier&) = delete;
  background_verifier& operator=(const background_verifier&) = delete;

  // A pass at once, then one per interval, until stop().
  void start();
  void stop();
  // One full pass, its reads spread over the interval. False when stopped first.
  bool pass(std::stop_token stop);

 private:
  using id_set = std::set<bson::value, value_less>;
  // A suspect: the paths that differ and the dependent as read (what the verifier reads of it).
  struct suspect {
    std::vector<std::string> paths;
    bson::document read;
  };
  using suspects = std::map<bson::value, suspect, value_less>;

  // Walks one mapping's dependents; true when the walk went through to the end.
  bool verify_mapping(const mapping::mapping& m, const std::function<bool(std::size_t)>& pace,
                      std::stop_token stop);
  // Compares `found` again until confirmed or cleared, then counts, logs and repairs what is
  // drift. Adds what stays drifted (not repaired) to `drifted`.
  mongo::status confirm(const mapping::mapping& m, suspects found, id_set& drifted,
                        std::stop_token stop);
  // Waits until the stream of `m` has applied through `t`; false when it did not in time, is not
  // this instance's, or stop was requested.
  bool settled(const mapping::mapping& m, bson::timestamp t, std::stop_token stop);

  mongo::connection& conn_;
  metrics::metrics& metrics_;
  const std::string meta_db_;
  const planner_fn planner_;
  const applied_fn applied_;
  const background_verify_options opts_;
  // The mapping set of the pass under way (the verifiers plan repairs with it).
  std::shared_ptr<const mapping::planner> current_;
  // Per mapping, the dependents left drifted by the last pass: not counted or logged again.
  std::map<std::string, id_set, std::less<>> left_drifted_;
  std::jthread thread_;
};

}  // namespace denormd::ops
