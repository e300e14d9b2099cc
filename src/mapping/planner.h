#pragma once
// The planner: (mappings, change event) -> write operations. Pure: no I/O, no clock, no
// driver. Built once from the loaded mappings; const afterwards and safe to share.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mapping/change_event.h"
#include "mapping/computed_fields.h"
#include "mapping/mapping.h"
#include "mapping/partition_route.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

// Which mappings an event is for while a stream replays history that only some of them need:
// a mapping put back after it was removed catches up from where it stopped while the others,
// already past that history, skip it (docs/architecture.md, "Changing mappings"). Positions
// are resume tokens' `_data`, which order like the events they name.
struct replay_gate {
  // Mappings not named in `from` take events after this position.
  std::string others_after;
  // Mapping name -> the position after which that mapping takes events.
  std::map<std::string, std::string, std::less<>> from;

  // Whether mapping `name` takes the event at `position`.
  bool admits(std::string_view name, std::string_view position) const;
  // Whether every mapping takes the event at `position` and every later one.
  bool passed(std::string_view position) const;
  bool operator==(const replay_gate&) const = default;
};

class planner {
 public:
  // Prepares each mapping's kind (what it derives from its settings) and indexes them.
  // `partitions`: the namespaces read as that many partitioned streams (--partitions), each
  // checked by the caller (watched, at least 2).
  explicit planner(std::vector<mapping> mappings, std::map<ns, int> partitions = {});
  planner(const planner&) = delete;  // ops point into mappings_
  planner& operator=(const planner&) = delete;

  const std::vector<mapping>& mappings() const { return mappings_; }
  // Every namespace some mapping reads as a source, in order.
  std::vector<ns> source_namespaces() const;
  // Every namespace to watch: the sources, plus the targets of fillNewTargets mappings; a
  // partitioned one as its partitions (a stream each). Other members take a namespace or any of
  // its partitions alike.
  std::vector<ns> watched_namespaces() const;
  // The top-level fields of a source document that any mapping reading `source` needs
  // (for change_event::parse_bson). Empty when no mapping reads it.
  const std::vector<std::string>& document_fields(const ns& source) const;
  // True when a computed field of a mapping reading `source` reads $$ROOT or $$CURRENT: its
  // documents are read whole, and document_fields() does not apply.
  bool reads_whole_document(const ns& source) const;
  // The computed fields of the mappings reading `source` as their source, evaluated on each
  // event's documents before planning; nullptr when they have none.
  const computed_fields* computed(const ns& source) const;
  // The document states some mapping reading `source` (as a source, or as a target it
  // watches) needs with each change.
  stream_images needs_images(const ns& source) const;
  // What decides how `source`'s events are planned: every mapping that reads it as a source
  // or fills it as a target, with its fingerprint. Two planners with the same signature for a
  // namespace plan its events alike, so a reload keeps that namespace's pipeline running.
  std::string stream_signature(const ns& source) const;
  // The stages after $changeStream that drop on the server what no mapping of `source` would
  // plan anything for (docs/architecture.md, "Server-side filtering"): updates that touch none
  // of the paths its mappings watch, and deletes where only fills read it. Empty when no mapping
  // reads `source`. The planner skips the same events itself, so the filter only saves work.
  bson::array stream_filter(const ns& source) const;
  // The stage after the filter that trims each event's document (and its pre-image, where a
  // mapping needs it) to the top-level fields document_fields() lists (docs/architecture.md,
  // "Server-side filtering"): less to send and parse, and unrelated fields cannot make an
  // event too large. Empty when no mapping reads `source`.
  bson::array stream_projection(const ns& source) const;
  // The names of the mappings whose plans read `source` (as a source or a filled target).
  std::vector<std::string> mappings_reading(const ns& source) const;

  // Appends the writes one event needs. `notes` (optional) receives the reason an event
  // produced nothing where that is surprising (a key that cannot be known, for example).
  // With `gate`, only the mappings it admits at the event's position plan it. A mapping that
  // writes from a document on which one of its computed fields failed (ev.computed_failures)
  // also gets a dead letter per failure.
  // With `mine` (a partition of the namespace), only what that partition writes: the
  // dependents whose keys it owns; with `from`, of those only the ones whose owner in the
  // layout it takes over from has not applied the event (docs/architecture.md, "Partitioned
  // streams").
  void plan(const change_event& ev, std::vector<write_op>& out,
            std::vector<std::string>* notes = nullptr, const replay_gate* gate = nullptr,
            const partition& mine = {}, const handover* from = nullptr) const;
  // The partitions `source` is read as (0: not partitioned).
  int partitions_of(const ns& source) const;

 private:
  // What the planner derives from a mapping once instead of per event.
  struct compiled {
    const mapping* m;
    std::vector<std::string> watched;  // paths whose change matters
    stream_route route;                // how its events reach the partitions of its stream
  };
  struct source_plan {
    std::vector<compiled> mappings;   // mappings reading this namespace as their source
    std::vector<compiled> fills;      // fillNewTargets mappings whose target this is
    std::vector<std::string> fields;  // top-level fields any of them reads
    bool whole = false;               // ... or all of them (a computed field reads $$ROOT)
    std::shared_ptr<const computed_fields> computed;  // nullptr: none
  };

  // Appends a dead letter of `m` for each of ev.computed_failures in a field of `m`.
  void dead_letter_failures(const mapping& m, const change_event& ev,
                            std::vector<write_op>& out) const;

  // Drops the dead letters out[first..] of `c` unless `share` is the one partition that keeps
  // the event's, and adds the computed-field failures' there.
  void keep_dead_letters_once(const compiled& c, const change_event& ev, std::vector<write_op>& out,
                              std::size_t first, const key_share& share) const;
  // The plan of `source`'s namespace, or by_source_.end().
  std::map<ns, source_plan>::const_iterator plan_of(const ns& source) const;
  // The stage after the filter that keeps the events partition `source.part` plans for.
  bson::document partition_match(const ns& source) const;
  std::vector<mapping> mappings_;
  std::map<ns, source_plan> by_source_;
  std::map<ns, int> partitions_;
};

// The $each array of a push op built by recent_kind::push.
bson::array& pushed_elements(write_op& push);

}  // namespace denormd::mapping
