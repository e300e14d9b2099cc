#include "app/replay.h"

#include <charconv>

#include "bson/json.h"

namespace denormd::app {

expected<bson::timestamp> parse_start_at(const std::string& text) {
  // "t:i"
  if (const auto colon = text.find(':');
      colon != std::string::npos && text.find('-') == std::string::npos) {
    std::uint32_t t = 0;
    std::uint32_t i = 0;
    const char* end = text.data() + text.size();
    auto a = std::from_chars(text.data(), text.data() + colon, t);
    auto b = std::from_chars(text.data() + colon + 1, end, i);
    if (a.ec == std::errc() && a.ptr == text.data() + colon && b.ec == std::errc() &&
        b.ptr == end) {
      return bson::timestamp{t, i};
    }
    return fail("--start-at \"" + text + "\" is not a timestamp t:i (two whole numbers)");
  }
  // ISO-8601, through the Extended JSON date parser.
  auto doc = bson::parse_json("{\"d\":{\"$date\":\"" + text + "\"}}");
  if (!doc || !doc->get("d")->is<bson::date_time>()) {
    return fail("--start-at \"" + text + "\" is neither ISO-8601 (2024-05-01T10:00:00Z) nor t:i");
  }
  const std::int64_t ms = doc->get("d")->as<bson::date_time>().millis;
  if (ms < 0) return fail("--start-at \"" + text + "\" is before 1970");
  return bson::timestamp{static_cast<std::uint32_t>(ms / 1000), 0};
}

expected<replay_point> parse_replay(const options& o) {
  replay_point r;
  if (!o.resume_after.empty()) {
    auto token = bson::parse_json(o.resume_after);
    if (!token || !token->contains("_data")) {
      return fail("--resume-after needs a resume token like {\"_data\":\"8265...\"}, not \"" +
                  o.resume_after + "\"");
    }
    r.resume_after = std::move(token).value();
  }
  if (!o.start_at.empty()) {
    auto ts = parse_start_at(o.start_at);
    if (!ts) return ts.error();
    r.start_at = *ts;
  }
  return r;
}

}  // namespace denormd::app
