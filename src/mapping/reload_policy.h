#pragma once
// What a reload decides (README, "Changing mappings"; docs/architecture.md, "Reload" and
// "Reloads with --ha"), apart from carrying it out: which namespaces keep, hand over, start or
// stop their pipelines; where a removed mapping stopped reading each namespace; where a
// namespace's stream starts again so that a mapping put back with the definition it stopped
// with replays what it missed while the others skip it. Pure, like lease::lease_machine: mapping
// sets, positions and stop points in, moves and positions out; app::reloader does the I/O
// (stopping and starting pipelines, reading and storing checkpoints) and logs.
//
// Where a removed mapping stopped is kept in three places, each for one kind of reader:
// `removed()` (this process, without --ha; recorded in denormd_mappings by the automatic
// backfill, so that the next start knows it), the gone mappings (with --ha: what this instance
// knows of mappings not running, to write into a namespace's checkpoint when it holds it), and
// the stopped entries of each namespace's checkpoint (with --ha, read by whichever instance
// holds the namespace when the mapping is put back).
//
// Lifecycle: one per reloader. Not thread-safe: the reloader's thread only.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/mapping.h"
#include "mapping/ns.h"
#include "mapping/planner.h"

namespace denormd::mapping {

// Where a removed mapping stopped reading one namespace: everything up to `token` was applied
// for it. Put back with the same definition, it replays the namespace's changes from there
// instead of being backfilled (README, "Changing mappings").
struct stop_point {
  ns source;
  bson::document token;
  std::optional<bson::timestamp> token_time;  // of the event it names (none: unknown)
  std::string filter;                         // of the stream it came from
  bool operator==(const stop_point&) const = default;
};

// A removed mapping's definition and where it stopped, by mapping name.
struct removed_mapping {
  std::string fingerprint;
  std::vector<stop_point> stopped_at;
  bool operator==(const removed_mapping&) const = default;
};
using removed_mappings = std::map<std::string, removed_mapping, std::less<>>;

// With --ha: a mapping that stopped reading a namespace, where (everything up to `token` was
// applied for it). Kept with the namespace's checkpoint, so that it moves with the lease.
struct stopped_mapping {
  std::string mapping;
  std::string fingerprint;
  bson::document token;
  std::optional<bson::timestamp> token_time;  // of the event `token` names (none: unknown)
  std::string filter;                         // of the stream `token` came from
  bool operator==(const stopped_mapping&) const = default;
};

// One mapping as the record of mapping versions keeps it: what the daemon needs at start to
// know which mappings went away and where they stopped.
struct recorded_mapping {
  std::string name;
  std::string fingerprint;
  bool removed = false;
  std::vector<ns> reads;               // the namespaces it read (source; filled target)
  std::vector<stop_point> stopped_at;  // removed ones: where they stopped
};

// The namespaces a mapping's changes come from: its source, and its target when it fills new
// targets.
std::vector<ns> reads_of(const mapping& m);

// How a reload changes the mapping set, by name.
struct set_change {
  std::vector<std::string> added, changed, removed;
  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
  bool operator==(const set_change&) const = default;
};
set_change compare(const planner& was, const planner& next);

// What happens to one namespace's pipeline in a reload.
struct namespace_move {
  enum class kind {
    stop,       // no longer watched: its pipeline stops, its checkpoint kept
    keep,       // same stream: its pipeline runs on with the old set
    hand_over,  // changed stream: a new pipeline goes on from where the old one stopped
    start       // newly watched: starts from its checkpoint (or now)
  };
  ns source;
  kind what = kind::keep;
  bool operator==(const namespace_move&) const = default;
};
// The moves from `was` (watching `was_watched`) to `next`: the stops first, then each
// namespace `next` watches, in its order. With `ha` a newly watched namespace gets no move: it
// starts when its lease is taken.
std::vector<namespace_move> namespace_moves(const std::vector<ns>& was_watched, const planner& was,
                                            const planner& next, bool ha);

// Where a stream resumes, as far as a reload decides it.
struct resume_position {
  std::optional<bson::document> resume_after;
  std::optional<bson::timestamp> start_at;
  std::optional<bson::timestamp> token_time;
  std::string filter;
  std::optional<replay_gate> gate;
  bool operator==(const resume_position&) const = default;
};

// Where a stream starts when mappings put back replay what they missed.
struct replay {
  resume_position from;
  bool rewound = false;               // before the base: the checkpoint moves back first
  std::vector<std::string> mappings;  // the mappings that replay
};

// Where a stream that would start at `base` starts when the mappings `back` were put back with
// the definition they stopped with, each at its stop point: at the earliest of them, with a gate
// so that the others skip what they applied. `back` is not empty.
replay replay_from(resume_position base,
                   const std::map<std::string, stop_point, std::less<>>& back);

// With --ha: where a namespace starts, settled with the stopped entries its checkpoint keeps.
struct settled {
  resume_position from;
  std::optional<replay> replayed;
  std::vector<stopped_mapping> entries;  // what its checkpoint keeps from now
  bool store = false;  // the entries or a rewind are to be stored before the pipeline starts
};

class reload_policy {
 public:
  // At start, from the record of mapping versions and the set that runs: which mappings went
  // away and where they stopped. `positions`: where each namespace a mapping gone since the
  // last run read resumes (its checkpoint; none: never stored), read for the namespaces
  // `positions_needed` names.
  static std::vector<ns> positions_needed(const std::vector<recorded_mapping>& recorded,
                                          const planner& running);
  void start(const std::vector<recorded_mapping>& recorded, const planner& running,
             const std::map<ns, resume_position>& positions);

  // A reload from `was` to `next` begins: the mappings it removes are gone (--ha).
  void begin(const planner& was, const planner& next);
  // `running` runs: its mappings are no longer removed (put back and replayed, or backfilled).
  void running(const planner& running);

  // Without --ha: the pipeline of `source` stopped at `at`; the mappings of `was` reading it that
  // `next` lacks stopped there. Returns those whose position is unknown (`at` has no token: the
  // old pipeline applied nothing; put back, they are not replayed).
  std::vector<std::string> stopped(const ns& source, const resume_position& at, const planner& was,
                                   const planner& next);
  // Without --ha: where `source` starts from `base` planning with `next`, the mappings put back
  // with the definition they stopped with replaying from where they stopped (their stop points
  // there are used up). nullopt: none is put back; it starts at `base`.
  std::optional<replay> returning(resume_position base, const ns& source, const planner& next);

  // With --ha: where `source` starts from `base` planning with `next`, settled with `stored`, the
  // stopped entries its checkpoint keeps: a mapping gone that read it (at `base`) gets an entry,
  // and one put back with the definition it stopped with replays from its entry.
  settled settle(resume_position base, const ns& source, const planner& next,
                 const std::vector<stopped_mapping>& stored) const;

  // Removed mappings and where they stopped, by name (recorded in denormd_mappings).
  const removed_mappings& removed() const { return removed_; }

 private:
  // With --ha: a mapping that ran once and does not run now, with the namespaces it read and
  // where it stopped as recorded (by a denormd without --ha, or at the last start).
  struct gone_mapping {
    std::string fingerprint;
    std::vector<ns> reads;
    std::vector<stop_point> stopped_at;
  };

  removed_mappings removed_;
  std::map<std::string, gone_mapping, std::less<>> gone_;
};

}  // namespace denormd::mapping
