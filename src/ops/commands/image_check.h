#pragma once
// Whether the collections a mapping needs document images from keep them
// (changeStreamPreAndPostImages). An incremental aggregate cannot apply a delta without the
// child's states before and after a change, so `run` and `check --uri` refuse to start
// without them; a recompute aggregate falls back to recomputing every parent, so it is only
// warned about. Stateless; the connection is the caller's.

#include <string>
#include <vector>

#include "mapping/planner.h"
#include "mongo/connection.h"

namespace denormd::ops {

struct image_problem {
  bool fatal = false;
  std::string message;  // names the mapping, the collection and the command that fixes it
};

// The problems of every source namespace of `planner`; an error reaching the server is one too.
std::vector<image_problem> check_images(mongo::connection& conn, const mapping::planner& planner);

}  // namespace denormd::ops
