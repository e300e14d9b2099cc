#pragma once
// The lease protocol of one instance (docs/architecture.md, "High availability"). Every TTL/3
// it writes its heartbeat, reads the live instances and the lease table, and acquires, renews,
// gives up or drops leases as its lease_machine decides. It streams nothing itself: it asks
// the daemon, through `unit_hooks`, to start a unit it acquired and to stop one it lost or
// gives up, and a unit given up is released only once the daemon says its pipeline stopped
// (its last checkpoint stored). Each lease held has a deadline (steady ms) shared with the
// unit's writers, which stop writing when it passes unrenewed.
//
// Lifecycle: start(); drain() before the pipelines stop (renew only: nothing is taken or
// given up any more; it never waits for a round); release_all() after they stopped (every
// lease released, the heartbeat withdrawn). The destructor stops the thread without releasing
// (as a crash would). A round stops between two statements once stopping.
// Thread-safety: drain(), released(), held_units() and layout_conflicts() from any thread; the rest
// from the owner's.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lease/lease_machine.h"
#include "lease/lease_table.h"
#include "metrics/metrics.h"

namespace denormd::lease {

// What a pipeline holding a lease needs: the epoch its checkpoints carry, and the deadline
// (steady ms) past which it must not write; 0 once the lease is gone.
struct lease_grant {
  std::int64_t epoch = 0;
  std::shared_ptr<const std::atomic<std::int64_t>> deadline;
};

// Called on the coordinator's thread; they must not wait for the daemon (post and return).
struct unit_hooks {
  // Start streaming `unit` under `grant`.
  std::function<void(const std::string& unit, const lease_grant& grant)> start;
  // Stop `unit`'s pipeline (it finishes its batch and stores its checkpoint); then, when
  // `release`, call coordinator::released(unit).
  std::function<void(const std::string& unit, bool release)> stop;
  // Marks the unit's checkpoint with `epoch`, so that no older holder can write or store one
  // any more; returns the epoch it carries afterwards (a newer one when the lease table is
  // behind it). `taken_over`: the previous holder did not release the lease (it is gone, or
  // paused), so a transaction it left open is ended first.
  std::function<mongo::result<std::int64_t>(const std::string& unit, std::int64_t epoch,
                                            bool taken_over)>
      fence;
  // What this instance says of the units it holds, written with each heartbeat
  // (unit_report.h); may be empty. It reads the pipelines' state and must not block.
  std::function<bson::document()> report;
};

struct coordinator_options {
  std::string instance_id;
  std::vector<std::string> units;  // the watched namespaces' full names, at start
  std::chrono::milliseconds ttl{10000};
};

class coordinator {
 public:
  coordinator(lease_table& store, metrics::metrics& m, coordinator_options opts, unit_hooks hooks);
  ~coordinator();
  coordinator(const coordinator&) = delete;
  coordinator& operator=(const coordinator&) = delete;

  void start();
  // One round now: what the thread does every period (tests call it without start()).
  void round();
  void drain();
  void release_all();
  // The units to share from now on (a reload changed the watched namespaces): new ones are
  // taken as rendezvous hashing says; a held one no longer among them is released at once, so
  // the daemon must have stopped its pipeline first. Its lease series goes.
  void set_units(std::vector<std::string> units);
  // The daemon stopped a unit given up: release its lease.
  void released(const std::string& unit);
  std::vector<std::string> held_units() const;
  // What the last round found of namespaces another live instance reads in another layout of
  // partitions, in words ("" when none). Any thread.
  std::string layout_conflicts() const;

 private:
  void run(std::stop_token stop);
  // Rounds run every TTL/3 (at least 50 ms), sooner when another's lease is about to expire.
  std::chrono::milliseconds round_every() const;
  std::chrono::milliseconds next_round(std::chrono::milliseconds every) const;
  // `taken_over`: its row names a holder that did not release it.
  void acquire(const std::string& unit, std::int64_t sent_ms, bool taken_over);
  void renew(const std::string& unit, std::int64_t epoch, std::int64_t sent_ms);
  // No longer held: fence the writers, count `reason`, forget it.
  void forget(const std::string& unit, const char* reason);
  void release_locked(const std::string& unit);
  // Keeps what a round found of layout conflicts, logged when it changes. Under mutex_.
  void note_conflicts(std::vector<layout_conflict> found);

  lease_table& store_;
  metrics::metrics& metrics_;
  const coordinator_options opts_;
  const unit_hooks hooks_;
  mutable std::mutex mutex_;  // guards everything below
  lease_machine machine_;
  std::map<std::string, std::shared_ptr<std::atomic<std::int64_t>>> deadlines_;
  std::set<std::string> releasing_;  // given up, waiting for the daemon to stop them
  std::vector<std::string> live_;
  std::vector<lease_row> table_;
  std::string conflicts_;  // layout_conflicts()
  // Until the next lease held by another instance expires (ms, as the server counted when
  // read); the next round comes no later, so a dead owner's units move as soon as they can.
  std::optional<std::int64_t> next_expiry_ms_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stopping_{false};  // release_all() began: the round in flight ends early
  std::jthread thread_;
};

}  // namespace denormd::lease
