#pragma once
// FNV-1a, 64 bits: a hash that is the same on every build, platform and instance (std::hash
// is not), for fingerprints and lease placement that other processes must agree with.

#include <cstdint>
#include <string_view>

namespace denormd {

inline constexpr std::uint64_t fnv1a_offset = 0xcbf29ce484222325ULL;

// Continues from `h`, so that several strings can be hashed as one sequence.
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = fnv1a_offset) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace denormd
