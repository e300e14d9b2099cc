#pragma once
// The Prometheus metrics of docs/metrics.md, named and labelled exactly as documented. One
// instance per process, created at start-up and shared by every stage; all methods are
// thread-safe (prometheus-cpp's metrics are atomic; label lookups go through a small
// mutex-guarded cache per family).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace denormd::metrics {

class metrics {
 public:
  explicit metrics(std::string_view version);
  ~metrics();
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  // denormd_events_total{source, op}
  void count_events(std::string_view source, std::string_view op, std::uint64_t n = 1);
  // denormd_writes_total{mapping, result}: result is "ok", "retried", "rejected", "dry_run"
  void count_writes(std::string_view mapping, std::string_view result, std::uint64_t n = 1);
  // denormd_documents_modified_total{mapping}
  void count_modified(std::string_view mapping, std::uint64_t n);
  // denormd_lag_seconds{source}: now minus the cluster time of the oldest unapplied event
  void set_lag(std::string_view source, double seconds);
  // denormd_apply_latency_seconds{mapping}: event cluster time to write acknowledged
  void observe_apply_latency(std::string_view mapping, double seconds);
  // denormd_batch_events{source}
  void observe_batch(std::string_view source, std::size_t events);
  // denormd_fanout{mapping}: dependents written per change event that made writes, observed
  // `events` times (a bulk write's documents spread evenly over its events)
  void observe_fanout(std::string_view mapping, double dependents, std::uint64_t events = 1);
  // denormd_fanout's sum and count so far (the operator's page's write amplification).
  struct fanout_totals {
    double sum = 0;
    std::uint64_t count = 0;
  };
  fanout_totals fanout(std::string_view mapping) const;
  // denormd_checkpoint_age_seconds{source}
  void set_checkpoint_age(std::string_view source, double seconds);
  // denormd_resumes_total{source, reason}
  void count_resume(std::string_view source, std::string_view reason);
  // denormd_history_lost_total{source}
  void count_history_lost(std::string_view source);
  // denormd_errors_total{stage, code}
  void count_error(std::string_view stage, std::string_view code);
  // denormd_batch_attempts{source}: attempts of the source's batch in flight so far (0 once
  // one succeeds)
  void set_batch_attempts(std::string_view source, int attempts);
  // denormd_stuck_batches_total{source, stage}: batches that failed stuck_attempts times in a
  // row at `stage`
  void count_stuck_batch(std::string_view source, std::string_view stage);
  // How many failed attempts in a row make a batch stuck.
  static constexpr int stuck_attempts = 5;
  // denormd_deadletters_total{mapping}
  void count_deadletter(std::string_view mapping);
  // denormd_watcher_ready{source}
  void set_watcher_ready(std::string_view source, bool ready);
  // denormd_backfill_documents_total{mapping}
  void count_backfill(std::string_view mapping, std::uint64_t n);
  // denormd_backfill_progress{mapping}: share of the documents the backfill has walked
  void set_backfill_progress(std::string_view mapping, double share);
  // denormd_mapping_info{mapping, fingerprint} = 1: the definition each mapping runs (the
  // series of its earlier definitions go)
  void set_mapping_info(std::string_view mapping, std::string_view fingerprint);
  // A mapping no longer runs: its info and backfill-progress series go (its counters stay).
  // Nothing may be setting its backfill progress meanwhile.
  void remove_mapping(std::string_view mapping);
  // A namespace is no longer watched: its gauges go (its counters stay). Its pipeline must
  // have stopped.
  void remove_source(std::string_view source);
  // denormd_applied_through_seconds{mapping}: the cluster time (seconds) through which every
  // change the mapping reads is applied and acknowledged
  void set_applied_through(std::string_view mapping, std::uint32_t seconds);
  // denormd_mapping_reloads_total{result}: result is "ok" or "error"
  void count_reload(std::string_view result);
  // With --verify-interval. denormd_drift_found_total{mapping}: drifted dependents found by the
  // background verify; denormd_drift_repaired_total{mapping}: those it rewrote.
  void count_drift_found(std::string_view mapping, std::uint64_t n);
  void count_drift_repaired(std::string_view mapping, std::uint64_t n);
  // denormd_verify_last_pass_timestamp_seconds{mapping}: when the last full pass over the
  // mapping's dependents finished (goes with remove_mapping).
  void set_verify_last_pass(std::string_view mapping, double unix_seconds);
  // Creates the zero-valued drift series of a mapping the background verify runs for.
  void declare_verify(std::string_view mapping);
  // denormd_history_headroom_seconds{source}: how far the oldest entry the server keeps is
  // behind the source's stored checkpoint (negative: history already lost)
  void set_history_headroom(std::string_view source, double seconds);
  // Its series goes (the oplog cannot be read, or the source no longer runs).
  void remove_history_headroom(std::string_view source);

  // With --ha only. denormd_lease_held{unit}: 1 while this instance holds the unit's lease.
  void set_lease_held(std::string_view unit, bool held);
  // A unit is no longer shared (a reload stopped watching it): its lease_held series goes.
  void remove_lease(std::string_view unit);
  // denormd_lease_changes_total{reason}: acquired, lost (not renewed in time), released,
  // stolen (found taken by another instance when renewing).
  void count_lease_change(std::string_view reason);
  // denormd_instances: the live instances this one sees, itself included.
  void set_instances(std::size_t n);
  // Creates the lease series of `units` (held 0) and every reason, for dashboards and alerts.
  void declare_leases(const std::vector<std::string>& units);

  // Creates the zero-valued series of a source or a mapping, so every family is visible from
  // start-up (dashboards and rate()/increase() alerts need a series before its first event).
  void declare_source(std::string_view source);
  void declare_mapping(std::string_view mapping);

  // Every family in the Prometheus text exposition format.
  std::string serialize() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace denormd::metrics
