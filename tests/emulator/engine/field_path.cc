#include "field_path.h"

namespace mongo_emulator::engine {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  if (dotted.empty()) return parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = dotted.find('.', start);
    parts.emplace_back(dotted.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string join_path(const std::vector<std::string>& parts, std::size_t begin, std::size_t end) {
  std::string out;
  end = std::min(end, parts.size());
  for (std::size_t i = begin; i < end; ++i) {
    if (i != begin) out += '.';
    out += parts[i];
  }
  return out;
}

std::optional<std::size_t> update_index(std::string_view component) {
  // More than 18 digits cannot be an index of any storable array; treat as a field name.
  if (component.empty() || component.size() > 18) return std::nullopt;
  std::size_t n = 0;
  for (const char c : component) {
    if (!is_digit(c)) return std::nullopt;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n;
}

bool is_positional(std::string_view component) {
  return component == "$";
}

bool is_array_filter_identifier(std::string_view component) {
  return component.size() >= 3 && component.starts_with("$[") && component.ends_with(']');
}

std::string array_filter_identifier(std::string_view component) {
  return std::string(component.substr(2, component.size() - 3));
}

bool path_less::operator()(const std::string& a, const std::string& b) const {
  const bool a_number = !a.empty() && is_digit(a[0]) && !(a[0] == '0' && a.size() > 1);
  const bool b_number = !b.empty() && is_digit(b[0]) && !(b[0] == '0' && b.size() > 1);
  if (!a_number || !b_number) return a < b;
  // Both start with a digit: the longer is the larger number; MongoDB also orders digit-led
  // non-numbers ("12ab") by length, which only needs to be consistent.
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace mongo_emulator::engine
