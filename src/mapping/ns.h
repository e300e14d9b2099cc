#pragma once
// A MongoDB namespace. Plain value.

#include <compare>
#include <string>

namespace denormd::mapping {

struct ns {
  std::string db;
  std::string coll;
  std::string full() const { return db + "." + coll; }
  bool operator==(const ns&) const = default;
  auto operator<=>(const ns&) const = default;
};

}  // namespace denormd::mapping
