#pragma once
// Human-readable description of a mapping for `denormd check`: what it watches, the writes
// each event type produces, and the indexes those writes need. Pure.

#include <string>
#include <vector>

#include "mapping/mapping.h"

namespace denormd::app {

struct index_need {
  mapping::ns where;
  std::string keys;  // Extended JSON key document, e.g. {"customerId":1}
  std::string why;
};

std::vector<index_need> indexes_needed(const mapping::mapping& m);
std::string describe_mapping(const mapping::mapping& m);

}  // namespace denormd::app
