#pragma once
// The planner: (mappings, change event) -> write operations. Pure: no I/O, no clock, no
// driver. Built once from the loaded mappings; const afterwards and safe to share.

#include <map>
#include <string>
#include <vector>

#include "mapping/change_event.h"
#include "mapping/mapping.h"
#include "mapping/write_op.h"

namespace denormd::mapping {

class planner {
 public:
  // Prepares each mapping's kind (what it derives from its settings) and indexes them.
  explicit planner(std::vector<mapping> mappings);
  planner(const planner&) = delete;  // ops point into mappings_
  planner& operator=(const planner&) = delete;

  const std::vector<mapping>& mappings() const { return mappings_; }
  // Every namespace some mapping reads as a source, in order.
  std::vector<ns> source_namespaces() const;
  // Every namespace to watch: the sources, plus the targets of fillNewTargets mappings.
  std::vector<ns> watched_namespaces() const;
  // The top-level fields of a source document that any mapping reading `source` needs
  // (for change_event::parse_bson). Empty when no mapping reads it.
  const std::vector<std::string>& document_fields(const ns& source) const;
  // The document states some mapping reading `source` needs with each change.
  stream_images needs_images(const ns& source) const;

  // Appends the writes one event needs. `notes` (optional) receives the reason an event
  // produced nothing where that is surprising (a key that cannot be known, for example).
  void plan(const change_event& ev, std::vector<write_op>& out,
            std::vector<std::string>* notes = nullptr) const;

 private:
  // What the planner derives from a mapping once instead of per event.
  struct compiled {
    const mapping* m;
    std::vector<std::string> watched;  // paths whose change matters
  };
  struct source_plan {
    std::vector<compiled> mappings;   // mappings reading this namespace as their source
    std::vector<compiled> fills;      // fillNewTargets mappings whose target this is
    std::vector<std::string> fields;  // top-level fields any of them reads
  };

  std::vector<mapping> mappings_;
  std::map<ns, source_plan> by_source_;
};

// The $each array of a push op built by recent_kind::push.
bson::array& pushed_elements(write_op& push);

}  // namespace denormd::mapping
