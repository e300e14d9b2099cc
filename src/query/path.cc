#include "query/path.h"

namespace denormd::query {

namespace {

// Walks `rest` from `current`; returns false when the visitor asked to stop.
bool walk(const bson::value& current, std::string_view rest, std::optional<std::size_t> index,
          const branch_visitor& visit) {
  if (rest.empty()) return visit(&current, index);
  const auto dot = rest.find('.');
  const std::string_view part = rest.substr(0, dot);
  const std::string_view next =
      dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  if (current.is_document()) {
    const bson::value* child = current.as_document().get(part);
    if (child == nullptr) return visit(nullptr, index);
    return walk(*child, next, index, visit);
  }
  if (current.is_array()) {
    const auto& items = current.as_array();
    // A numeric component indexes the array (and is not also looked up as a field name in
    // its elements: a simplification MongoDB only differs from for documents with numeric keys).
    if (auto i = parse_index(part)) {
      return *i < items.size() ? walk(items[*i], next, index, visit) : visit(nullptr, index);
    }
    bool reached = false;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_document()) continue;  // nested arrays and scalars are not traversed
      reached = true;
      if (!walk(items[i], rest, index ? index : std::optional<std::size_t>(i), visit)) return false;
    }
    return reached ? true : visit(nullptr, index);
  }
  return visit(nullptr, index);  // a scalar cannot hold the rest of the path
}

}  // namespace

std::optional<std::size_t> parse_index(std::string_view component) {
  if (component.empty() || component.size() > 9) return std::nullopt;
  if (component.size() > 1 && component[0] == '0') return std::nullopt;
  std::size_t n = 0;
  for (const char c : component) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  return n;
}

std::vector<std::string_view> field_components(std::string_view path) {
  std::vector<std::string_view> out;
  for (std::size_t from = 0;;) {
    const auto dot = path.find('.', from);
    const std::string_view part =
        path.substr(from, dot == std::string_view::npos ? dot : dot - from);
    if (!parse_index(part)) out.push_back(part);
    if (dot == std::string_view::npos) return out;
    from = dot + 1;
  }
}

void resolve_branches(const bson::document& doc, std::string_view path,
                      const branch_visitor& visit) {
  const auto dot = path.find('.');
  const bson::value* first = doc.get(path.substr(0, dot));
  if (first == nullptr) {
    visit(nullptr, std::nullopt);
    return;
  }
  walk(*first, dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1),
       std::nullopt, visit);
}

void resolve_path(const bson::document& doc, std::string_view path, const path_visitor& visit) {
  resolve_branches(doc, path, [&](const bson::value* v, std::optional<std::size_t> index) {
    return v == nullptr ? true : visit(*v, index);
  });
}

}  // namespace denormd::query
