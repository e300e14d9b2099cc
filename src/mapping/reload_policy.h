#pragma once
// What a reload decides (docs/running.md, "Changing mappings"; docs/architecture.md, "Reload" and
// "Reloads with --ha"), apart from carrying it out: which namespaces keep, hand over, start or
// stop their pipelines; where a removed mapping stopped reading each namespace; where a
// namespace's stream starts again so that a mapping put back with the definition it stopped
// with replays what it missed while the others skip it. Pure, like lease::lease_machine: mapping
// sets, positions and stop points in, moves and positions out; app::reloader does the I/O
// (stopping and starting pipelines, reading and storing checkpoints) and logs.
//
// Where a removed mapping stopped is kept in one place, with and without --ha: the stopped
// entries of each namespace's checkpoint (`stoppedMappings`), stored in the same write as the
// checkpoint's token. The instance that stops the namespace's pipeline at a reload writes them,
// and so does a start that finds a mapping gone since the last run (at the namespace's
// checkpoint); whichever pipeline of the namespace starts with the mapping back replays from
// its entry. denormd before this kept them in denormd_mappings (`stoppedAt`) instead: read once
// at start, they move into the checkpoints.
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
// instead of being backfilled (docs/running.md, "Changing mappings").
struct stop_point {
  ns source;
  bson::document token;
  std::optional<bson::timestamp> token_time;  // of the event it names (none: unknown)
  std::string filter;                         // of the stream it came from
  bool operator==(const stop_point&) const = default;
};

// A mapping that stopped reading a namespace, where (everything up to `token` was applied for
// it). Kept with the namespace's checkpoint, so that it moves with the namespace (and, with
// --ha, its lease).
struct stopped_mapping {
  std::string mapping;
  std::string fingerprint;
  bson::document token;
  std::optional<bson::timestamp> token_time;  // of the event `token` names (none: unknown)
  std::string filter;                         // of the stream `token` came from
  bool operator==(const stopped_mapping&) const = default;
};

// One mapping as the record of mapping versions keeps it: what the daemon needs at start to
// know which mappings went away.
struct recorded_mapping {
  std::string name;
  std::string fingerprint;
  bool removed = false;
  std::vector<ns> reads;  // the namespaces it read (source; filled target)
  // Removed ones: where they stopped, as a denormd before the entries recorded it (stoppedAt).
  std::vector<stop_point> stopped_at;
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

// Where a namespace starts, settled with the stopped entries its checkpoint keeps.
struct settled {
  resume_position from;
  std::optional<replay> replayed;
  std::vector<stopped_mapping> entries;  // what its checkpoint keeps from now
  bool store = false;  // the entries or a rewind are to be stored before the pipeline starts
  // Gone mappings that read it and have no entry, while `from` has no position (the stream
  // applied nothing yet): where they stopped is unknown; put back, they are backfilled.
  std::vector<std::string> unknown;
};

class reload_policy {
 public:
  // `ha`: the namespaces are spread over instances, each of which may have run a mapping gone
  // here up to its namespace's checkpoint, without an entry yet.
  explicit reload_policy(bool ha) : ha_(ha) {}

  // At start, from the record of mapping versions and the set that runs: the namespaces whose
  // checkpoints get entries before any pipeline starts (entries_at_start), read by a mapping gone
  // since the last run or named by a stop point an earlier denormd recorded.
  static std::vector<ns> positions_needed(const std::vector<recorded_mapping>& recorded,
                                          const planner& running);
  // The entries for those namespaces, by namespace, from `positions`, where each resumes (its
  // checkpoint; no resume_after: never stored): a mapping gone since the last run applied
  // everything up to its namespaces' checkpoints, which nothing has moved since; a recorded stop
  // point stays as it was. A checkpoint that has an entry for the mapping keeps that one.
  static std::map<ns, std::vector<stopped_mapping>> entries_at_start(
      const std::vector<recorded_mapping>& recorded, const planner& running,
      const std::map<ns, resume_position>& positions);
  // Then: with --ha, every recorded mapping that does not run is gone (settle).
  void start(const std::vector<recorded_mapping>& recorded, const planner& running);

  // A reload from `was` to `next` begins: the mappings it removes are gone.
  void begin(const planner& was, const planner& next);
  // `running` runs: its mappings are no longer gone (put back and replayed, or backfilled).
  // Without --ha every namespace a removed mapping read was settled by now: none is gone.
  void running(const planner& running);

  // Where `source` starts from `base` planning with `next`, settled with `stored`, the stopped
  // entries its checkpoint keeps: a mapping gone that read it (at `base`) gets an entry, and one
  // put back with the definition it stopped with replays from its entry.
  settled settle(resume_position base, const ns& source, const planner& next,
                 const std::vector<stopped_mapping>& stored) const;

 private:
  // A mapping that ran and does not run now, with the namespaces it read.
  struct gone_mapping {
    std::string fingerprint;
    std::vector<ns> reads;
  };

  bool ha_;
  std::map<std::string, gone_mapping, std::less<>> gone_;
};

}  // namespace denormd::mapping
