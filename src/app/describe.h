#pragma once
// Human-readable description of a mapping for `denormd check`: what it watches, the writes
// each event type produces, the indexes those writes need, and warnings; each kind says its
// part. Pure.

#include <string>
#include <vector>

#include "mapping/mapping.h"

namespace denormd::app {

std::vector<mapping::index_need> indexes_needed(const mapping::mapping& m);
std::string describe_mapping(const mapping::mapping& m);
// What a valid mapping does that its author may not expect: one sentence each, for `check`.
std::vector<std::string> mapping_warnings(const mapping::mapping& m);

}  // namespace denormd::app
