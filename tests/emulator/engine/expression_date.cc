// Date operators, as MongoDB 6.0's expression.cpp and TimeZone evaluate them: $dateToString
// (format, timezone, onNull) and $year, $month, $dayOfMonth (a date, [date] or {date, timezone}).
// Time zones: "UTC", "GMT", "Etc/UTC", "Etc/GMT" and offsets ±hh, ±hhmm, ±hh:mm; the emulator has
// no Olson database, so other names fail as unknown ones do (40485).

#include <cstdint>
#include <cstdio>
#include <string>

#include "expression_support.h"
#include "value_text.h"

namespace mongo_emulator::engine::ops {

namespace bson = denormd::bson;
using denormd::fail;

namespace {

constexpr std::int64_t millis_per_day = 86'400'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

// The proleptic Gregorian calendar (H. Hinnant's days_from_civil / civil_from_days).
std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = floor_div(y, 400);
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct civil_time {
  std::int64_t year = 0;
  int month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0;
  int day_of_year = 0;  // 1-366
  int weekday = 0;      // 0 Sunday .. 6 Saturday
};

civil_time civil_from_millis(std::int64_t millis) {
  civil_time t;
  const std::int64_t days = floor_div(millis, millis_per_day);
  std::int64_t rest = millis - days * millis_per_day;
  t.hour = static_cast<int>(rest / 3'600'000);
  t.minute = static_cast<int>(rest / 60'000 % 60);
  t.second = static_cast<int>(rest / 1000 % 60);
  t.millis = static_cast<int>(rest % 1000);
  const std::int64_t z = days + 719468;
  const std::int64_t era = floor_div(z, 146097);
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  t.year = yoe + era * 400 + (t.month <= 2 ? 1 : 0);
  t.day_of_year = static_cast<int>(days - days_from_civil(t.year, 1, 1) + 1);
  t.weekday = static_cast<int>(((days + 4) % 7 + 7) % 7);  // 1970-01-01 was a Thursday
  return t;
}

int iso_weeks_in_year(std::int64_t y) {
  const auto p = [](std::int64_t x) { return (x + x / 4 - x / 100 + x / 400) % 7; };
  return p(y) == 4 || p(y - 1) == 3 ? 53 : 52;
}

// The ISO 8601 week (1-53) and its year.
std::pair<int, std::int64_t> iso_week(const civil_time& t) {
  const int iso_weekday = (t.weekday + 6) % 7 + 1;  // Monday 1 .. Sunday 7
  const int week = (t.day_of_year - iso_weekday + 10) / 7;
  if (week < 1) return {iso_weeks_in_year(t.year - 1), t.year - 1};
  if (week > iso_weeks_in_year(t.year)) return {1, t.year + 1};
  return {week, t.year};
}

std::string padded(std::int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
  return buf;
}

std::string year_text(std::int64_t year) {
  if (year < 0 || year > 9999) {
    raise(
        "Could not convert date to string: date component was outside the supported range of "
        "0-9999: " +
            std::to_string(year),
        18537);
  }
  return padded(year, 4);
}

std::string offset_text(int offset_minutes) {
  const int a = offset_minutes < 0 ? -offset_minutes : offset_minutes;
  return std::string(offset_minutes < 0 ? "-" : "+") + padded(a / 60, 2) + padded(a % 60, 2);
}

std::string specifier_text(char c, const civil_time& t, int offset_minutes) {
  switch (c) {
    case 'Y':
      return year_text(t.year);
    case 'G':
      return year_text(iso_week(t).second);
    case 'm':
      return padded(t.month, 2);
    case 'd':
      return padded(t.day, 2);
    case 'H':
      return padded(t.hour, 2);
    case 'M':
      return padded(t.minute, 2);
    case 'S':
      return padded(t.second, 2);
    case 'L':
      return padded(t.millis, 3);
    case 'j':
      return padded(t.day_of_year, 3);
    case 'w':
      return padded(t.weekday + 1, 1);
    case 'u':
      return padded((t.weekday + 6) % 7 + 1, 1);
    case 'U':
      return padded((t.day_of_year - 1 + 7 - t.weekday) / 7, 2);
    case 'V':
      return padded(iso_week(t).first, 2);
    case 'z':
      return offset_text(offset_minutes);
    case 'Z':
      return std::to_string(offset_minutes);
    default:
      return "%";
  }
}

}  // namespace

denormd::status check_date_format(std::string_view format) {
  static constexpr std::string_view known = "%YGmdHMSLjwuUVzZ";
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') continue;
    if (i + 1 == format.size()) return fail("Unmatched '%' at end of format string", 18535);
    if (known.find(format[i + 1]) == std::string_view::npos) {
      return fail(
          "Invalid format character '%" + std::string(1, format[i + 1]) + "' in format string",
          18536);
    }
    ++i;
  }
  return {};
}

std::string format_date(std::int64_t millis, std::string_view format, int offset_minutes) {
  const civil_time t = civil_from_millis(millis + std::int64_t{offset_minutes} * 60'000);
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      out += specifier_text(format[++i], t, offset_minutes);
    } else {
      out += format[i];
    }
  }
  return out;
}

std::int64_t object_id_millis(const bson::oid& id) {
  const auto& b = id.bytes;
  const std::uint32_t seconds = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
  return std::int64_t{seconds} * 1000;
}

namespace {

// Value::coerceToDate.
std::int64_t date_millis(const bson::value& v) {
  if (v.is<bson::date_time>()) return v.as<bson::date_time>().millis;
  if (v.is<bson::timestamp>()) return std::int64_t{v.as<bson::timestamp>().t} * 1000;
  if (v.is<bson::oid>()) return object_id_millis(v.as<bson::oid>());
  raise("can't convert from BSON type " + type_of(v) + " to Date", 16006);
}

bool digits(std::string_view s) {
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return !s.empty();
}

// The UTC offset of a time zone name, in minutes (TimeZoneDatabase::getTimeZone).
int zone_offset(const std::string& zone) {
  if (zone == "UTC" || zone == "GMT" || zone == "Etc/UTC" || zone == "Etc/GMT") return 0;
  std::string_view s(zone);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    const int sign = s[0] == '-' ? -1 : 1;
    std::string_view hh = s.substr(1, 2);
    std::string_view mm = s.size() == 5 ? s.substr(3) : s.size() == 6 ? s.substr(4) : "00";
    const bool shape = s.size() == 3 || s.size() == 5 || (s.size() == 6 && s[3] == ':');
    if (shape && digits(hh) && digits(mm))
      return sign * (std::stoi(std::string(hh)) * 60 + std::stoi(std::string(mm)));
  }
  raise("unrecognized time zone identifier: \"" + zone + "\"", 40485);
}

// makeTimeZone: nullopt (a null result) when the timezone is null or missing; UTC when absent.
std::optional<int> time_zone(const node& n, std::size_t i, evaluation& ev) {
  if (n.items[i].tree() == nullptr) return 0;
  const maybe_value zone = arg(n, i, ev);
  if (nullish(zone)) return std::nullopt;
  if (!zone->is_string())
    raise("timezone must evaluate to a string, found " + type_of(zone), 40517);
  return zone_offset(zone->as_string());
}

// $dateToString: items [date, format, timezone, onNull] (absent ones empty).
maybe_value eval_date_to_string(const node& n, evaluation& ev) {
  const maybe_value date = arg(n, 0, ev);
  maybe_value format;
  if (n.items[1].tree() != nullptr) {
    format = arg(n, 1, ev);
    if (!nullish(format)) {
      if (!format->is_string()) {
        raise("$dateToString requires that 'format' be a string, found: " + type_of(format) +
                  " with value " + value_text(*format),
              18533);
      }
      if (auto s = check_date_format(format->as_string()); !s)
        raise(s.error().message, s.error().code);
    }
  }
  const std::optional<int> offset = time_zone(n, 2, ev);
  if (nullish(date)) return n.items[3].tree() != nullptr ? arg(n, 3, ev) : bson::value{};
  if (!offset) return bson::value{};
  if (n.items[1].tree() != nullptr && nullish(format)) return bson::value{};
  const std::string text =
      format_date(date_millis(*date),
                  format ? std::string_view(format->as_string()) : iso_date_format, *offset);
  return bson::value(text);
}

denormd::status parse_date_to_string(const op_spec& op, const bson::value& arg, parse_scope& scope,
                                     node& n) {
  if (!arg.is_document())
    return fail("$dateToString only supports an object as its argument", 18629);
  for (const auto& f : arg.as_document()) {
    if (f.name != "date" && f.name != "format" && f.name != "timezone" && f.name != "onNull")
      return fail("Unrecognized argument to $dateToString: " + f.name, 18534);
  }
  if (auto s = parse_named_items(
          op, arg, {{"date", "format", "timezone", "onNull"}, {18628, 0, 0, 0}, 18534}, scope, n);
      !s)
    return s;
  const node* format = n.items[1].tree();
  if (format != nullptr && format->k == node::kind::constant && !format->constant.is_null()) {
    if (!format->constant.is_string()) {
      return fail("$dateToString requires that 'format' be a string, found: " +
                      std::string(bson::type_name(format->constant.kind())) + " with value " +
                      value_text(format->constant),
                  18533);
    }
    return check_date_format(format->constant.as_string());
  }
  return {};
}

enum class date_part { year, month, day_of_month };

// $year, $month, $dayOfMonth: items [date, timezone].
template <date_part Part>
maybe_value eval_date_part(const node& n, evaluation& ev) {
  const maybe_value date = arg(n, 0, ev);
  const std::optional<int> offset = time_zone(n, 1, ev);
  if (!offset || nullish(date)) return bson::value{};
  const civil_time t = civil_from_millis(date_millis(*date) + std::int64_t{*offset} * 60'000);
  switch (Part) {
    case date_part::year:
      return bson::value(static_cast<std::int32_t>(t.year));
    case date_part::month:
      return bson::value(std::int32_t{t.month});
    case date_part::day_of_month:
      break;
  }
  return bson::value(std::int32_t{t.day});
}

// DateExpressionAcceptingTimeZone::parse: <date>, [<date>] or {date, timezone}.
denormd::status parse_date_part(const op_spec& op, const bson::value& arg, parse_scope& scope,
                                node& n) {
  const std::string name(op.name);
  if (arg.is_document() &&
      (arg.as_document().empty() || !arg.as_document().fields().front().name.starts_with('$'))) {
    for (const auto& f : arg.as_document()) {
      if (f.name != "date" && f.name != "timezone")
        return fail("unrecognized option to " + name + ": \"" + f.name + "\"", 40535);
    }
    if (arg.as_document().get("date") == nullptr) {
      return fail(
          "missing 'date' argument to " + name + ", provided: " + name + ": " + value_text(arg),
          40539);
    }
    return parse_named_items(op, arg, {{"date", "timezone"}, {40539, 0}, 40535}, scope, n);
  }
  const bson::value* date = &arg;
  if (arg.is_array()) {
    if (arg.as_array().size() != 1) {
      return fail(name + " accepts exactly one argument if given an array, but was given " +
                      std::to_string(arg.as_array().size()),
                  40536);
    }
    date = &arg.as_array().front();
  }
  if (auto s = add_item(*date, scope, n); !s) return s;
  n.items.emplace_back();
  return {};
}

const op_spec table[] = {
    {"$dateToString", parse_date_to_string, eval_date_to_string},
    {"$year", parse_date_part, eval_date_part<date_part::year>},
    {"$month", parse_date_part, eval_date_part<date_part::month>},
    {"$dayOfMonth", parse_date_part, eval_date_part<date_part::day_of_month>},
};

}  // namespace

std::span<const op_spec> date_operators() {
  return table;
}

}  // namespace mongo_emulator::engine::ops
