#include "http/route_table.h"

#include <algorithm>
#include <cassert>

namespace denormd::http {

void route_table::add(std::vector<std::string> methods, std::string path, handler h) {
  assert(std::none_of(routes_.begin(), routes_.end(),
                      [&](const route& r) { return r.path == path; }) &&
         "a path is registered once");
  if (std::find(methods.begin(), methods.end(), "GET") != methods.end() &&
      std::find(methods.begin(), methods.end(), "HEAD") == methods.end())
    methods.push_back("HEAD");
  routes_.push_back({std::move(methods), std::move(path), std::move(h)});
}

route_table::match route_table::find(std::string_view method, std::string_view path) const {
  for (const auto& r : routes_) {
    if (r.path != path) continue;
    if (std::find(r.methods.begin(), r.methods.end(), method) != r.methods.end())
      return {&r.serve, {}};
    match refused;
    for (const auto& m : r.methods)
      refused.allow += (refused.allow.empty() ? "" : ", ") + m;
    return refused;
  }
  return {};
}

std::optional<std::string> url_decoded(std::string_view in) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k] == '+') {
      out += ' ';
    } else if (in[k] != '%') {
      out += in[k];
    } else {
      if (k + 2 >= in.size()) return std::nullopt;
      const int hi = hex(in[k + 1]);
      const int lo = hex(in[k + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      k += 2;
    }
  }
  return out;
}

}  // namespace denormd::http
