#pragma once
// What `denormd verify` found, per mapping, and its two renderings (text for people, one
// JSON object for scripts). Plain values; the rendering is pure.

#include <cstdint>
#include <string>
#include <vector>

#include "bson/value.h"

namespace denormd::ops {

// One drifted dependent: its _id and the target paths that differ from the sources.
struct drift_example {
  bson::value id;
  std::vector<std::string> paths;
};

// One dependent that references a source document that does not exist.
struct orphan_example {
  bson::value id;
  bson::array keys;  // the missing source keys
};

// An aggregate's child on which one of its expressions fails: left out of its parent's values
// (as everywhere), but a problem in the data to fix. `id` null: the children of `parent` that
// fail could not be told apart (then its values were not checked).
struct failing_child_example {
  bson::value parent;
  bson::value id;
  std::string error;
};

struct mapping_report {
  std::string mapping;
  std::string kind;    // the mapping kind's name
  std::string source;  // namespaces, "shop.customers"
  std::string target;
  std::uint64_t checked =
      0;  // dependents compared (copy: targets matching `where`; recent: parents)
  std::uint64_t drifted = 0;            // dependents that differ
  std::vector<drift_example> examples;  // the first few
  // copy: dependents referencing a missing source. Under onSourceDelete "keep" they keep
  // their last copies by design (allowed, not drift); under "unset" those whose copies are
  // still there are counted in `drifted` too.
  std::uint64_t orphaned = 0;
  bool orphans_allowed = false;
  bool reports_orphans = false;  // the kind references sources that may be missing (copy)
  std::vector<orphan_example> orphan_examples;
  std::uint64_t repaired = 0;    // drifted dependents rewritten by --repair
  std::uint64_t unrepaired = 0;  // drifted dependents the server refused to rewrite
  // aggregate: children on which an expression fails (each also a reason for exit 3).
  std::uint64_t failing = 0;
  std::vector<failing_child_example> failing_examples;  // the first few
};

struct verify_report {
  std::vector<mapping_report> mappings;
  bool repair = false;
  bool complete = true;  // false: stopped on request before every mapping was checked

  std::uint64_t drifted() const;
  std::uint64_t repaired() const;
  std::uint64_t unrepaired() const;
  std::uint64_t failing() const;
  // Nothing drifted and no child fails: exit 0.
  bool clean() const { return drifted() == 0 && failing() == 0; }
};

std::string to_text(const verify_report& r);
std::string to_json(const verify_report& r);

}  // namespace denormd::ops
