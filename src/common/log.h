#pragma once
// Structured logging: one line per entry, text for people or JSON for log pipelines.
//
//   log::info("watcher", "resumed", {{"source", ns}, {"token", token}, {"attempt", 3}});
//
// Process-wide state set once by configure() at start-up (it may be called again, e.g. by
// tests). Every function is thread-safe: an entry is formatted first, then written whole under
// one mutex, so lines from different threads never interleave. Nothing here knows about
// URIs or credentials: callers pass only values that are safe to print.

#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace denormd::log {

enum class level { debug, info, warn, error };
enum class format { text, json };

// "debug", "info", "warn" (or "warning"), "error"; nullopt for anything else.
std::optional<level> parse_level(std::string_view name);
// "text" or "json"; nullopt for anything else.
std::optional<format> parse_format(std::string_view name);
std::string_view to_string(level l);

// Integers are written as numbers; char is left out since it is rarely meant as one.
template <class I>
concept log_integer = std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>;

// One key=value of an entry. Key and value are copied, so a field built from temporaries (say
// std::to_string(n)) stays valid wherever it goes; short strings stay in the SSO buffer.
class field {
 public:
  using value_type = std::variant<std::string, std::int64_t, std::uint64_t, double, bool>;

  field(std::string_view key, std::string_view v) : key_(key), value_(std::string(v)) {}
  field(std::string_view key, std::string v) : key_(key), value_(std::move(v)) {}
  // Without this a string literal would convert to bool, not to a string.
  field(std::string_view key, const char* v) : key_(key), value_(std::string(v)) {}
  field(std::string_view key, bool v) : key_(key), value_(v) {}
  field(std::string_view key, double v) : key_(key), value_(v) {}
  template <log_integer I>
  field(std::string_view key, I v) : key_(key) {
    if constexpr (std::is_signed_v<I>)
      value_ = static_cast<std::int64_t>(v);
    else
      value_ = static_cast<std::uint64_t>(v);
  }

  std::string_view key() const { return key_; }
  const value_type& value() const { return value_; }

 private:
  std::string key_;
  value_type value_;
};

using fields = std::initializer_list<field>;

// Sets the format, the lowest level written, and where lines go. `sink` must outlive every
// later log call (or the next configure); nullptr discards everything. Defaults: text, info,
// std::cerr.
void configure(format f, level min_level, std::ostream* sink = &std::cerr);

// False when entries of level `l` are dropped; check it before building costly fields.
bool enabled(level l);

// Writes one entry if its level is enabled. The span overload is for fields built at run time.
void write(level l, std::string_view component, std::string_view msg, fields f = {});
void write(level l, std::string_view component, std::string_view msg, std::span<const field> f);

inline void debug(std::string_view component, std::string_view msg, fields f = {}) {
  write(level::debug, component, msg, f);
}
inline void info(std::string_view component, std::string_view msg, fields f = {}) {
  write(level::info, component, msg, f);
}
inline void warn(std::string_view component, std::string_view msg, fields f = {}) {
  write(level::warn, component, msg, f);
}
inline void error(std::string_view component, std::string_view msg, fields f = {}) {
  write(level::error, component, msg, f);
}

// The line write() would produce (without the trailing newline), with the timestamp given in
// milliseconds since the Unix epoch. Exposed for tests; does not check the level.
std::string format_line(format fmt, std::int64_t unix_ms, level l, std::string_view component,
                        std::string_view msg, std::span<const field> f);

}  // namespace denormd::log
