#pragma once
// Which units (watched namespaces) this instance should hold, renew, give up or stop writing,
// decided from what it last read of the lease table and of the live instances. Pure: times in
// (ms of a steady clock), decisions out; the coordinator does the I/O and reports outcomes back.
//
// Work spreads evenly: every live instance holds its share of the units, within one of every
// other's (assign_units), a unit stays with its live holder while that holder is within its
// share, and the units that must move go by rendezvous score, so a change of membership moves
// as few units as it can. A lease held is writable until its *deadline*: the local
// time its last acquisition or renewal was sent, plus the TTL, minus a margin. The server
// dates the expiry from when it applied that write (later), so the deadline passes before any
// other instance can take the lease (docs/architecture.md, "High availability").
// Lifecycle: one per instance. Not thread-safe: the coordinator's thread only.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace denormd::lease {

// One row of the lease table as read. `owner` is "" once released; `expired` is judged by the
// server's clock when read.
struct lease_row {
  std::string unit;
  std::string owner;
  std::int64_t epoch = 0;
  bool expired = false;
};

struct lease_action {
  enum class kind {
    acquire,  // take the lease (free, expired, released, or ours from an earlier life)
    renew,    // extend a lease held
    release,  // give it up: stop the unit, store its checkpoint, then release (rebalance, stop)
    drop      // its deadline passed unrenewed: stop writing the unit now (lost)
  };
  kind what = kind::acquire;
  std::string unit;
  std::int64_t epoch = 0;  // of the lease held (renew, release, drop)
  bool operator==(const lease_action&) const = default;
};

struct held_lease {
  std::int64_t epoch = 0;
  std::int64_t deadline_ms = 0;
};

// The instance among `live` with the highest rendezvous score for `unit`; "" when none is
// live. The same on every instance and build: FNV-1a and a fixed mixer, not std::hash.
std::string owner_of(const std::string& unit, const std::vector<std::string>& live);

// Who should hold each of `units` among `live`: each instance gets units/live or one
// more (the instances holding the most now get the extra ones), a holder in `table` (not
// expired, live) keeps the units it holds that it scores highest, up to its share, and every
// other unit goes to the instance within its share with the highest rendezvous score. Streams
// (units named "db.coll"), jobs (names without a dot: the automatic backfill) and the
// partitions of each partitioned namespace ("db.coll#i/N") are shared out separately, so that
// the streams are within one of each other (6 on 2 instances: 3:3), and so are one namespace's
// partitions.
// Every instance that read the same table decides the same. Pure.
std::map<std::string, std::string> assign_units(const std::vector<std::string>& units,
                                                const std::vector<std::string>& live,
                                                const std::vector<lease_row>& table);

// The collection a stream unit reads: its name without a partition suffix ("db.coll#i/N").
std::string collection_of(const std::string& unit);

// Another live instance holds a unit of a namespace this one reads in another layout of
// partitions (--partitions differs): both cannot stream it, as their writes would not be
// ordered against each other.
struct layout_conflict {
  std::string collection;
  std::string mine;    // one of this instance's units of it
  std::string theirs;  // the other's unit
  std::string holder;  // the other instance
  // This instance gives up (and does not take) its units of it: the other's name is lower.
  bool yield = false;
};

class lease_machine {
 public:
  // `margin_ms`: how long before the server's expiry this instance stops writing.
  lease_machine(std::string me, std::vector<std::string> units, std::int64_t ttl_ms,
                std::int64_t margin_ms);

  // What to do at `now_ms`. `live`: the instances whose heartbeat has not expired (this one
  // counts as live whatever the list says). `stopping`: release every lease.
  std::vector<lease_action> decide(std::int64_t now_ms, const std::vector<std::string>& live,
                                   const std::vector<lease_row>& table, bool stopping) const;

  // The namespaces whose layout of partitions differs from a live instance's (as read).
  std::vector<layout_conflict> conflicts(const std::vector<std::string>& live,
                                         const std::vector<lease_row>& table) const;
  // Outcomes. `sent_ms`: when the write that took or renewed the lease was sent.
  void acquired(const std::string& unit, std::int64_t epoch, std::int64_t sent_ms);
  void renewed(const std::string& unit, std::int64_t sent_ms);
  // No longer held (released, lost, or found taken by another).
  void dropped(const std::string& unit);

  // The units to share from now on (a reload changed the watched namespaces). A held unit no
  // longer among them is the caller's to release; decide() leaves it alone.
  void set_units(std::vector<std::string> units);

  // Until when `unit` may be written; nullopt when it is not held.
  std::optional<std::int64_t> deadline(const std::string& unit) const;
  const std::map<std::string, held_lease>& held() const { return held_; }
  const std::string& me() const { return me_; }
  const std::vector<std::string>& units() const { return units_; }

 private:
  const std::string me_;
  std::vector<std::string> units_;
  const std::int64_t ttl_ms_;
  const std::int64_t margin_ms_;
  std::map<std::string, held_lease> held_;
};

}  // namespace denormd::lease
