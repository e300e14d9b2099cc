#include "mapping/mapping.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "common/fnv.h"
#include "mapping/change_event.h"
#include "mapping/computed_expression.h"

namespace denormd::mapping {

std::string_view mapping::kind_name() const {
  return visit([](const auto& k) { return k.name; });
}

std::vector<std::string> mapping::written_paths() const {
  return visit([&](const auto& k) { return k.written_paths(*this); });
}

std::vector<std::string> mapping::watched_paths() const {
  std::vector<std::string> all;
  for (const auto& f : fields) {
    if (!f.computed) {
      all.push_back(f.source_path);
    } else if (f.computed->reads_whole_document()) {
      all.emplace_back(whole_document_path);
    } else {
      all.insert(all.end(), f.computed->reads().begin(), f.computed->reads().end());
    }
  }
  visit([&](const auto& k) { k.add_watched_paths(*this, all); });
  std::vector<std::string> out;
  for (auto& p : all) {
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

bool mapping::has_computed_fields() const {
  return std::any_of(fields.begin(), fields.end(), [](const field_map& f) { return f.computed; });
}

const field_map* mapping::field_named(std::string_view n) const {
  for (const auto& f : fields) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

std::string mapping::fingerprint() const {
  // The settings every kind has, then the kind's own. The text is hashed as earlier versions
  // did, so stored fingerprints stay valid.
  std::string s(kind_name());
  s += "|" + source.full() + "|" + target.full() + "|" + into + "|";
  for (const auto& f : fields) {
    // A plain field hashes as before; a computed one by its expression, not its value path.
    s += f.name + "=" + (f.computed ? "expr:" + f.computed->canonical_text() : f.source_path) + ",";
  }
  visit([&](const auto& k) { k.fingerprint(s); });
  s += "|" + std::to_string(static_cast<int>(on_source_delete));
  char hex[17];
  // The first versions seeded FNV-1a with 1469598103934665603, not the standard offset basis
  // (14695981039346656037). Fingerprints are stored (denormd_mappings, denormd_backfill), so
  // that seed stays: another would make every mapping look changed after an upgrade.
  constexpr std::uint64_t stored_seed = 1469598103934665603ULL;
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(s, stored_seed)));
  return hex;
}

}  // namespace denormd::mapping
