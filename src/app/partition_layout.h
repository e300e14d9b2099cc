#pragma once
// --partitions against the loaded mappings: which watched namespaces are read as how many
// partitioned streams (docs/ha.md, "Partitioned streams"). Pure.

#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "mapping/mapping.h"
#include "mapping/ns.h"

namespace denormd::app {

// The layout `given` (--partitions as typed) asks for. A namespace no mapping watches is an
// error, naming it and the watched ones, unless `unwatched_ok` (a reload that stopped watching
// it: it is left out); so is a malformed entry (parse_partitions).
expected<std::map<mapping::ns, int>> partition_layout(const std::vector<std::string>& given,
                                                      const std::vector<mapping::mapping>& mappings,
                                                      bool unwatched_ok = false);

}  // namespace denormd::app
