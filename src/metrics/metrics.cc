#include "metrics/metrics.h"

#include <array>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace denormd::metrics {

namespace {

template <std::size_t N>
using label_names = std::array<const char*, N>;
template <std::size_t N>
using label_values = std::array<std::string_view, N>;

// Hash and equality over label values that accept both the stored std::string keys and the
// callers' string_views, so a cache hit allocates nothing.
template <std::size_t N>
struct values_hash {
  using is_transparent = void;
  template <class S>
  std::size_t operator()(const std::array<S, N>& values) const noexcept {
    std::size_t h = 0;
    for (const auto& v : values)
      h = h * 1000003u ^ std::hash<std::string_view>{}(std::string_view(v));
    return h;
  }
};
template <std::size_t N>
struct values_equal {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const std::array<A, N>& a, const std::array<B, N>& b) const noexcept {
    for (std::size_t i = 0; i < N; ++i)
      if (std::string_view(a[i]) != std::string_view(b[i])) return false;
    return true;
  }
};

// One family with a cache from label values to its child metric. prometheus-cpp's own
// Family::Add builds a std::map of labels and hashes it on every call; hot paths (one call
// per event or write) should pay a hash of two short strings instead. A reference stays valid
// until remove_if() removes its child, which only the families of things that go away use.
template <class T, std::size_t N>
class labelled {
 public:
  labelled(prometheus::Family<T>& family, label_names<N> names,
           prometheus::Histogram::BucketBoundaries buckets = {})
      : family_(family), names_(names), buckets_(std::move(buckets)) {}

  T& get(const label_values<N>& values) {
    std::lock_guard lock(mutex_);
    if (auto it = children_.find(values); it != children_.end()) return *it->second;
    prometheus::Labels labels;
    std::array<std::string, N> key;
    for (std::size_t i = 0; i < N; ++i) {
      key[i] = std::string(values[i]);
      labels.emplace(names_[i], key[i]);
    }
    T* child = nullptr;
    if constexpr (std::is_same_v<T, prometheus::Histogram>)
      child = &family_.Add(labels, buckets_);
    else
      child = &family_.Add(labels);
    children_.emplace(std::move(key), child);
    return *child;
  }

  // Removes the children whose label values `pred` picks.
  template <class Pred>
  void remove_if(Pred pred) {
    std::lock_guard lock(mutex_);
    for (auto it = children_.begin(); it != children_.end();) {
      if (!pred(it->first)) {
        ++it;
        continue;
      }
      family_.Remove(it->second);
      it = children_.erase(it);
    }
  }

 private:
  prometheus::Family<T>& family_;
  const label_names<N> names_;
  const prometheus::Histogram::BucketBoundaries buckets_;
  std::mutex mutex_;
  std::unordered_map<std::array<std::string, N>, T*, values_hash<N>, values_equal<N>> children_;
};

prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& r, const char* name,
                                                 const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const char* name,
                                             const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& histogram(prometheus::Registry& r, const char* name,
                                                     const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

// Help strings are the meanings in docs/metrics.md, verbatim without backticks, so that
// /metrics and the monitoring contract say the same; metrics_test compares the two.
struct metrics::impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  labelled<prometheus::Counter, 2> events{
      counter(*registry, "denormd_events_total",
              "Change events read from a source's change stream, by operation type (insert, "
              "update, replace, delete, ...)."),
      {"source", "op"}};
  labelled<prometheus::Counter, 2> writes{
      counter(
          *registry, "denormd_writes_total",
          "Write operations sent for a mapping, by outcome (for example ok, retried, rejected)."),
      {"mapping", "result"}};
  labelled<prometheus::Counter, 1> modified{
      counter(*registry, "denormd_documents_modified_total",
              "Dependent documents actually changed by a mapping's writes (nModified), so copies "
              "that were already current do not count."),
      {"mapping"}};
  labelled<prometheus::Gauge, 1> lag{
      gauge(*registry, "denormd_lag_seconds",
            "Now minus the cluster time of the oldest event not yet applied; 0 when caught up; "
            "the stored checkpoint's age until the stream is first read."),
      {"source"}};
  labelled<prometheus::Histogram, 1> apply_latency{
      histogram(*registry, "denormd_apply_latency_seconds",
                "Time from an event's cluster time to the acknowledgement of the write it caused."),
      {"mapping"},
      {.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}};
  labelled<prometheus::Histogram, 1> batch{
      histogram(*registry, "denormd_batch_events", "Number of change events per applied batch."),
      {"source"},
      {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}};
  labelled<prometheus::Histogram, 1> fanout{
      histogram(*registry, "denormd_fanout",
                "Dependents written per change event that made writes for a mapping, its write "
                "amplification: the documents a bulk write matched, spread evenly over the "
                "events it wrote for."),
      {"mapping"},
      {1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000, 100000, 1e6}};
  labelled<prometheus::Gauge, 1> checkpoint_age{
      gauge(*registry, "denormd_checkpoint_age_seconds",
            "Seconds since the resume token of a watched namespace was last stored in "
            "denormd_checkpoints."),
      {"source"}};
  labelled<prometheus::Counter, 2> resumes{
      counter(*registry, "denormd_resumes_total",
              "Times a change stream was reopened, by reason: checkpoint (at start, from the "
              "stored token), error (after a transient error such as a dropped connection or "
              "a step-down, from the last token read; the driver's own resume inside a read "
              "counts too), resync (after lost history, from the "
              "operation time taken before the re-sync)."),
      {"source", "reason"}};
  labelled<prometheus::Counter, 1> history_lost{
      counter(*registry, "denormd_history_lost_total",
              "Times the stream's position had fallen off the oplog (error 286) and the "
              "affected mappings were re-synced by a backfill; once per episode, however many "
              "re-syncs it took."),
      {"source"}};
  labelled<prometheus::Counter, 2> errors{
      counter(*registry, "denormd_errors_total",
              "Errors by pipeline stage (stream, plan, compute (evaluating computed fields), "
              "write, checkpoint, ...) and server or internal error code, retried ones "
              "included."),
      {"stage", "code"}};
  labelled<prometheus::Gauge, 1> batch_attempts{
      gauge(*registry, "denormd_batch_attempts",
            "Attempts so far of the batch a source is writing, when they failed (0 once one "
            "succeeds): how many times in a row the batch in flight was tried."),
      {"source"}};
  labelled<prometheus::Counter, 2> stuck_batches{
      counter(*registry, "denormd_stuck_batches_total",
              "Batches that failed 5 attempts in a row, by source and stage (write, checkpoint, "
              "compute, fence), each counted once, when its fifth attempt failed; the log says "
              "why, and the batch is still retried."),
      {"source", "stage"}};
  labelled<prometheus::Counter, 1> deadletters{
      counter(*registry, "denormd_deadletters_total",
              "Writes the server rejected for good (document too large, validation; one per "
              "document left out) and events not followed because a reference value cannot be "
              "one (op: \"deadLetter\"), all stored in denormd_deadletters."),
      {"mapping"}};
  labelled<prometheus::Gauge, 1> watcher_ready{
      gauge(*registry, "denormd_watcher_ready",
            "1 while the source's change stream is streaming, 0 while it is stopped, resyncing or "
            "retrying."),
      {"source"}};
  labelled<prometheus::Counter, 1> backfill{
      counter(*registry, "denormd_backfill_documents_total",
              "Source documents processed by a backfill (denormd backfill, fillNewTargets or a "
              "history-lost re-sync)."),
      {"mapping"}};
  labelled<prometheus::Gauge, 1> backfill_progress{
      gauge(*registry, "denormd_backfill_progress",
            "Share of its documents the automatic backfill of a new or changed mapping has walked, "
            "from 0 to 1 (1 once done)."),
      {"mapping"}};
  labelled<prometheus::Gauge, 2> mapping_info{
      gauge(*registry, "denormd_mapping_info",
            "Always 1; the labels carry a mapping's name and the fingerprint of the definition it "
            "runs (denormd status lists the same)."),
      {"mapping", "fingerprint"}};
  labelled<prometheus::Gauge, 1> applied_through{
      gauge(*registry, "denormd_applied_through_seconds",
            "Cluster time (seconds since the epoch) through which every change a mapping reads "
            "is applied and its writes acknowledged; what GET /applied waits for."),
      {"mapping"}};
  labelled<prometheus::Counter, 1> reloads{
      counter(*registry, "denormd_mapping_reloads_total",
              "Mapping reloads (SIGHUP, POST /-/reload, or a changed file with --watch-mappings) "
              "by result: ok (the new set runs), error (the files did not load; the old set runs "
              "on)."),
      {"result"}};
  labelled<prometheus::Gauge, 1> history_headroom{
      gauge(*registry, "denormd_history_headroom_seconds",
            "How far the oldest entry the server still keeps in its oplog is behind a source's "
            "stored checkpoint, in seconds: how long until a restart could no longer resume "
            "from it (0 or less: that history is already gone). Absent while the oplog cannot "
            "be read."),
      {"source"}};
  labelled<prometheus::Counter, 1> drift_found{
      counter(*registry, "denormd_drift_found_total",
              "With --verify-interval: dependents the background verify found differing from "
              "their sources once the stream had applied past its read (in-flight changes are "
              "not drift); one drifted document counts once while it stays drifted."),
      {"mapping"}};
  labelled<prometheus::Counter, 1> drift_repaired{
      counter(*registry, "denormd_drift_repaired_total",
              "With --verify-interval (and without --verify-no-repair): drifted dependents the "
              "background verify rewrote from their sources."),
      {"mapping"}};
  labelled<prometheus::Gauge, 1> verify_last_pass{
      gauge(*registry, "denormd_verify_last_pass_timestamp_seconds",
            "With --verify-interval: when (seconds since the epoch) the background verify last "
            "finished a full pass over a mapping's dependents. Absent until the first."),
      {"mapping"}};
  labelled<prometheus::Gauge, 1> lease_held{
      gauge(*registry, "denormd_lease_held",
            "With --ha: 1 while this instance holds the lease of a watched namespace (the "
            "unit) and so streams and writes it, or of auto-backfill and so runs the automatic "
            "backfill, 0 otherwise. Summed over instances, 1 per unit."),
      {"unit"}};
  labelled<prometheus::Counter, 1> lease_changes{
      counter(*registry, "denormd_lease_changes_total",
              "With --ha: leases this instance acquired, lost (not renewed before its "
              "deadline: it stopped writing), released (rebalancing to a joining instance, or "
              "stopping) or found stolen (taken by another instance when it came to renew)."),
      {"reason"}};
  labelled<prometheus::Gauge, 0> instances{
      gauge(*registry, "denormd_instances",
            "With --ha: the live instances this one sees (heartbeats not expired), itself "
            "included."),
      {}};
  prometheus::Family<prometheus::Gauge>& build_info = gauge(
      *registry, "denormd_build_info", "Always 1; the label carries the running denormd version.");
};

metrics::metrics(std::string_view version) : impl_(std::make_unique<impl>()) {
  impl_->build_info.Add({{"version", std::string(version)}}).Set(1);
  for (const std::string_view result : {"ok", "error"})
    impl_->reloads.get({result});
}

metrics::~metrics() = default;

void metrics::count_events(std::string_view source, std::string_view op, std::uint64_t n) {
  impl_->events.get({source, op}).Increment(static_cast<double>(n));
}

void metrics::count_writes(std::string_view mapping, std::string_view result, std::uint64_t n) {
  impl_->writes.get({mapping, result}).Increment(static_cast<double>(n));
}

void metrics::count_modified(std::string_view mapping, std::uint64_t n) {
  impl_->modified.get({mapping}).Increment(static_cast<double>(n));
}

void metrics::set_lag(std::string_view source, double seconds) {
  impl_->lag.get({source}).Set(seconds);
}

void metrics::observe_apply_latency(std::string_view mapping, double seconds) {
  impl_->apply_latency.get({mapping}).Observe(seconds);
}

void metrics::observe_batch(std::string_view source, std::size_t events) {
  impl_->batch.get({source}).Observe(static_cast<double>(events));
}

void metrics::observe_fanout(std::string_view mapping, double dependents, std::uint64_t events) {
  auto& h = impl_->fanout.get({mapping});
  for (std::uint64_t i = 0; i < events; ++i)
    h.Observe(dependents);
}

metrics::fanout_totals metrics::fanout(std::string_view mapping) const {
  const auto m = impl_->fanout.get({mapping}).Collect();
  return {m.histogram.sample_sum, m.histogram.sample_count};
}

void metrics::set_checkpoint_age(std::string_view source, double seconds) {
  impl_->checkpoint_age.get({source}).Set(seconds);
}

void metrics::count_resume(std::string_view source, std::string_view reason) {
  impl_->resumes.get({source, reason}).Increment();
}

void metrics::count_history_lost(std::string_view source) {
  impl_->history_lost.get({source}).Increment();
}

void metrics::count_error(std::string_view stage, std::string_view code) {
  impl_->errors.get({stage, code}).Increment();
}

void metrics::set_batch_attempts(std::string_view source, int attempts) {
  impl_->batch_attempts.get({source}).Set(attempts);
}

void metrics::count_stuck_batch(std::string_view source, std::string_view stage) {
  impl_->stuck_batches.get({source, stage}).Increment();
}

void metrics::count_deadletter(std::string_view mapping) {
  impl_->deadletters.get({mapping}).Increment();
}

void metrics::set_watcher_ready(std::string_view source, bool ready) {
  impl_->watcher_ready.get({source}).Set(ready ? 1 : 0);
}

void metrics::count_backfill(std::string_view mapping, std::uint64_t n) {
  impl_->backfill.get({mapping}).Increment(static_cast<double>(n));
}

void metrics::declare_source(std::string_view source) {
  for (const std::string_view op : {"insert", "update", "replace", "delete"}) {
    impl_->events.get({source, op});
  }
  impl_->lag.get({source}).Set(0);
  impl_->checkpoint_age.get({source}).Set(0);
  impl_->batch.get({source});
  for (const std::string_view reason : {"checkpoint", "error"})
    impl_->resumes.get({source, reason});
  impl_->history_lost.get({source});
  impl_->watcher_ready.get({source});
  impl_->errors.get({"stream", "network"});
  impl_->batch_attempts.get({source}).Set(0);
  impl_->stuck_batches.get({source, "write"});
}

void metrics::remove_mapping(std::string_view mapping) {
  impl_->mapping_info.remove_if([&](const auto& labels) { return labels[0] == mapping; });
  impl_->backfill_progress.remove_if([&](const auto& labels) { return labels[0] == mapping; });
  impl_->applied_through.remove_if([&](const auto& labels) { return labels[0] == mapping; });
  impl_->verify_last_pass.remove_if([&](const auto& labels) { return labels[0] == mapping; });
}

void metrics::remove_source(std::string_view source) {
  auto named = [&](const auto& labels) { return labels[0] == source; };
  impl_->lag.remove_if(named);
  impl_->checkpoint_age.remove_if(named);
  impl_->batch_attempts.remove_if(named);
  impl_->watcher_ready.remove_if(named);
  impl_->history_headroom.remove_if(named);
}

void metrics::set_applied_through(std::string_view mapping, std::uint32_t seconds) {
  impl_->applied_through.get({mapping}).Set(static_cast<double>(seconds));
}

void metrics::count_drift_found(std::string_view mapping, std::uint64_t n) {
  impl_->drift_found.get({mapping}).Increment(static_cast<double>(n));
}

void metrics::count_drift_repaired(std::string_view mapping, std::uint64_t n) {
  impl_->drift_repaired.get({mapping}).Increment(static_cast<double>(n));
}

void metrics::set_verify_last_pass(std::string_view mapping, double unix_seconds) {
  impl_->verify_last_pass.get({mapping}).Set(unix_seconds);
}

void metrics::declare_verify(std::string_view mapping) {
  impl_->drift_found.get({mapping});
  impl_->drift_repaired.get({mapping});
}

void metrics::set_history_headroom(std::string_view source, double seconds) {
  impl_->history_headroom.get({source}).Set(seconds);
}

void metrics::remove_history_headroom(std::string_view source) {
  impl_->history_headroom.remove_if([&](const auto& labels) { return labels[0] == source; });
}

void metrics::set_lease_held(std::string_view unit, bool held) {
  impl_->lease_held.get({unit}).Set(held ? 1 : 0);
}

void metrics::remove_lease(std::string_view unit) {
  impl_->lease_held.remove_if([&](const auto& labels) { return labels[0] == unit; });
}

void metrics::count_lease_change(std::string_view reason) {
  impl_->lease_changes.get({reason}).Increment();
}

void metrics::set_instances(std::size_t n) {
  impl_->instances.get({}).Set(static_cast<double>(n));
}

void metrics::declare_leases(const std::vector<std::string>& units) {
  for (const auto& u : units)
    impl_->lease_held.get({u});
  for (const std::string_view reason : {"acquired", "lost", "released", "stolen"})
    impl_->lease_changes.get({reason});
  impl_->instances.get({});
}

void metrics::count_reload(std::string_view result) {
  impl_->reloads.get({result}).Increment();
}

void metrics::set_backfill_progress(std::string_view mapping, double share) {
  impl_->backfill_progress.get({mapping}).Set(share);
}

void metrics::set_mapping_info(std::string_view mapping, std::string_view fingerprint) {
  impl_->mapping_info.remove_if(
      [&](const auto& labels) { return labels[0] == mapping && labels[1] != fingerprint; });
  impl_->mapping_info.get({mapping, fingerprint}).Set(1);
}

void metrics::declare_mapping(std::string_view mapping) {
  for (const std::string_view result : {"ok", "rejected"})
    impl_->writes.get({mapping, result});
  impl_->modified.get({mapping});
  impl_->apply_latency.get({mapping});
  impl_->fanout.get({mapping});
  impl_->deadletters.get({mapping});
  impl_->backfill.get({mapping});
  impl_->errors.get({"write", "network"});
}

std::string metrics::serialize() const {
  return prometheus::TextSerializer{}.Serialize(impl_->registry->Collect());
}

}  // namespace denormd::metrics
