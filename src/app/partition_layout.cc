#include "app/partition_layout.h"

#include <set>

#include "app/options.h"

namespace denormd::app {

expected<std::map<mapping::ns, int>> partition_layout(const std::vector<std::string>& given,
                                                      const std::vector<mapping::mapping>& mappings,
                                                      bool unwatched_ok) {
  auto parsed = parse_partitions(given);
  if (!parsed) return parsed.error();
  std::set<std::string> watched;
  for (const auto& m : mappings) {
    watched.insert(m.source.full());
    if (m.fill_new_targets) watched.insert(m.target.full());
  }
  std::map<mapping::ns, int> out;
  for (const auto& [name, n] : *parsed) {
    if (watched.count(name) == 0) {
      if (unwatched_ok) continue;
      std::string list;
      for (const auto& w : watched)
        list += (list.empty() ? "" : ", ") + w;
      return fail("--partitions " + name + "=" + std::to_string(n) + ": no mapping reads " + name +
                  " (the watched namespaces are " + list + ")");
    }
    const auto dot = name.find('.');
    out.emplace(mapping::ns{name.substr(0, dot), name.substr(dot + 1), {}}, n);
  }
  return out;
}

}  // namespace denormd::app
