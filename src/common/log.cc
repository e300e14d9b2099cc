#include "common/log.h"

#include "common/clock.h"
#include "common/json_text.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <ctime>
#include <mutex>

namespace denormd::log {

namespace {

// Level and format are read on every call, so they are atomics; the sink is only touched under
// the write mutex.
std::atomic<level> min_level_{level::info};
std::atomic<format> format_{format::text};
std::mutex sink_mutex_;
std::ostream* sink_ = &std::cerr;

// Text values are written bare when that is unambiguous (logfmt style), otherwise quoted with
// the same escapes as JSON, so one entry always stays on one line.
bool needs_quotes(std::string_view s) {
  if (s.empty()) return true;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

void append_text_value(std::string& out, std::string_view s) {
  if (!needs_quotes(s)) {
    out += s;
    return;
  }
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

// The message in text format is bare but must not break the line.
void append_text_message(std::string& out, std::string_view s) {
  for (char ch : s) {
    switch (ch) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += ch;
    }
  }
}

template <class N>
void append_number(std::string& out, N n) {
  std::array<char, 32> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), n);
  if (ec == std::errc()) out.append(buf.data(), end);
}

// Non-finite doubles have no JSON form; they are written as strings.
std::string_view non_finite_name(double d) {
  if (std::isnan(d)) return "NaN";
  return d > 0 ? "+Inf" : "-Inf";
}

// JSON numbers, booleans and strings; text writes the same value without JSON quoting rules.
void append_value(std::string& out, const field::value_type& v, format fmt) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (fmt == format::json) {
            out += '"';
            append_json_escaped(out, x);
            out += '"';
          } else {
            append_text_value(out, x);
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          if (!std::isfinite(x)) {
            if (fmt == format::json) out += '"';
            out += non_finite_name(x);
            if (fmt == format::json) out += '"';
          } else {
            append_number(out, x);
          }
        } else {
          append_number(out, x);
        }
      },
      v);
}

std::string_view upper_name(level l) {
  switch (l) {
    case level::debug:
      return "DEBUG";
    case level::info:
      return "INFO ";
    case level::warn:
      return "WARN ";
    case level::error:
      return "ERROR";
  }
  return "?????";
}

}  // namespace

std::optional<level> parse_level(std::string_view name) {
  if (name == "debug") return level::debug;
  if (name == "info") return level::info;
  if (name == "warn" || name == "warning") return level::warn;
  if (name == "error") return level::error;
  return std::nullopt;
}

std::optional<format> parse_format(std::string_view name) {
  if (name == "text") return format::text;
  if (name == "json") return format::json;
  return std::nullopt;
}

std::string_view to_string(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info";
    case level::warn:
      return "warn";
    case level::error:
      return "error";
  }
  return "unknown";
}

void configure(format f, level min_level, std::ostream* sink) {
  std::lock_guard lock(sink_mutex_);
  format_.store(f);
  min_level_.store(min_level);
  sink_ = sink;
}

bool enabled(level l) {
  return l >= min_level_.load(std::memory_order_relaxed);
}

std::string format_line(format fmt, std::int64_t unix_ms, level l, std::string_view component,
                        std::string_view msg, std::span<const field> f) {
  std::string out;
  out.reserve(96 + msg.size() + f.size() * 24);
  if (fmt == format::json) {
    out += "{\"ts\":\"";
    append_iso8601(out, unix_ms);
    out += "\",\"level\":\"";
    out += to_string(l);
    out += "\",\"component\":\"";
    append_json_escaped(out, component);
    out += "\",\"msg\":\"";
    append_json_escaped(out, msg);
    out += '"';
    for (const auto& x : f) {
      out += ",\"";
      append_json_escaped(out, x.key());
      out += "\":";
      append_value(out, x.value(), fmt);
    }
    out += '}';
  } else {
    append_iso8601(out, unix_ms);
    out += ' ';
    out += upper_name(l);
    out += ' ';
    append_text_message(out, component);
    out += ": ";
    append_text_message(out, msg);
    for (const auto& x : f) {
      out += ' ';
      append_text_message(out, x.key());
      out += '=';
      append_value(out, x.value(), fmt);
    }
  }
  return out;
}

void write(level l, std::string_view component, std::string_view msg, fields f) {
  write(l, component, msg, std::span<const field>(f.begin(), f.size()));
}

void write(level l, std::string_view component, std::string_view msg, std::span<const field> f) {
  if (!enabled(l)) return;
  // Formatting happens outside the lock; only the finished line is written under it.
  std::string line =
      format_line(format_.load(std::memory_order_relaxed), wall_ms(), l, component, msg, f);
  line += '\n';
  std::lock_guard lock(sink_mutex_);
  if (sink_ == nullptr) return;
  sink_->write(line.data(), static_cast<std::streamsize>(line.size()));
  sink_->flush();
}

}  // namespace denormd::log
