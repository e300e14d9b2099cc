#include "mapping/mapping.h"

#include <algorithm>

namespace denormd::mapping {

std::string_view mapping::kind_name() const {
  return visit([](const auto& k) { return k.name; });
}

std::vector<std::string> mapping::written_paths() const {
  return visit([&](const auto& k) { return k.written_paths(*this); });
}

std::vector<std::string> mapping::watched_paths() const {
  std::vector<std::string> all;
  for (const auto& f : fields)
    all.push_back(f.source_path);
  visit([&](const auto& k) { k.add_watched_paths(*this, all); });
  std::vector<std::string> out;
  for (auto& p : all) {
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

const field_map* mapping::field_named(std::string_view n) const {
  for (const auto& f : fields) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

}  // namespace denormd::mapping
