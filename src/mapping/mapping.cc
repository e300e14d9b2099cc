#include "mapping/mapping.h"

#include <algorithm>

namespace denormd::mapping {

std::string mapping::target_path(const field_map& f) const {
  std::string path;
  if (!target_array.empty()) {
    path = target_array + ".$[" + std::string(array_element_id) + "].";
  }
  if (!into.empty()) path += into + ".";
  return path + f.name;
}

std::vector<std::string> mapping::written_paths() const {
  if (kind == mapping_kind::recent) return {into};
  std::vector<std::string> out;
  for (const auto& f : fields) {
    std::string path = target_array.empty() ? "" : target_array + ".";
    if (!into.empty()) path += into + ".";
    out.push_back(path + f.name);
  }
  return out;
}

std::vector<std::string> mapping::watched_paths() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (const auto& f : fields)
    add(f.source_path);
  if (kind == mapping_kind::copy) {
    if (source_key != "_id") add(source_key);
  } else {
    add(parent_key);
    if (filter) {
      for (const auto& p : filter->paths())
        add(p);
    }
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
