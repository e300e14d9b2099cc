#include "app/applied_query.h"

#include <cstdint>
#include <cstdlib>
#include <optional>

#include "http/route_table.h"

namespace denormd::app {

namespace {

constexpr auto max_applied_wait = std::chrono::seconds(60);

std::optional<std::uint32_t> whole(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > 0xFFFFFFFFULL) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

}  // namespace

expected<applied_query> parse_applied_query(std::string_view query) {
  applied_query q;
  bool has_after = false;
  auto bad = [](std::string_view name, std::string_view value, std::string_view why) {
    return fail("bad " + std::string(name) + "=\"" + std::string(value) +
                "\": " + std::string(why));
  };
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    const auto value = http::url_decoded(eq == std::string_view::npos ? "" : part.substr(eq + 1));
    if (!value) return bad(name, part.substr(eq + 1), "malformed %-escape");
    if (name == "after") {
      const auto colon = value->find(':');
      const auto t = whole(std::string_view(*value).substr(0, colon));
      const auto i = colon == std::string::npos ? std::optional<std::uint32_t>(0)
                                                : whole(std::string_view(*value).substr(colon + 1));
      if (!t || !i) return bad(name, *value, "expected an operation time T or T:I (whole numbers)");
      q.after = bson::timestamp{*t, *i};
      has_after = true;
    } else if (name == "mapping") {
      q.mapping = *value;
    } else if (name == "timeout") {
      char* end = nullptr;
      const double seconds = std::strtod(value->c_str(), &end);
      if (value->empty() || *end != '\0' || !(seconds >= 0) ||
          seconds > static_cast<double>(max_applied_wait.count()))
        return bad(name, *value, "expected seconds from 0 to 60");
      q.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
    } else {
      return fail("unknown parameter \"" + std::string(name) +
                  "\" (GET /applied takes after, mapping and timeout)");
    }
  }
  if (!has_after) return fail("missing after=T[:I], the operation time to wait for");
  return q;
}

}  // namespace denormd::app
