#include "mapping/ns.h"

#include <charconv>

namespace denormd::mapping {

namespace {

// A decimal number of 1 to 4 digits, no sign.
std::optional<int> small_number(std::string_view text) {
  int n = 0;
  if (text.empty() || text.size() > 4) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return n;
}

}  // namespace

std::optional<ns> parse_unit(std::string_view unit) {
  partition part;
  const auto hash = unit.rfind('#');
  const auto slash = unit.rfind('/');
  if (hash != std::string_view::npos && slash != std::string_view::npos && slash > hash) {
    const auto index = small_number(unit.substr(hash + 1, slash - hash - 1));
    const auto count = small_number(unit.substr(slash + 1));
    if (index && count && *count >= 2 && *index < *count) {
      part = partition{*index, *count};
      unit = unit.substr(0, hash);
    }
  }
  const auto dot = unit.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == unit.size()) return std::nullopt;
  return ns{std::string(unit.substr(0, dot)), std::string(unit.substr(dot + 1)), part};
}

}  // namespace denormd::mapping
