#pragma once
// The wall clock as the daemon uses it (milliseconds since the Unix epoch, as change events
// and checkpoints carry it), its one text form (ISO-8601 in UTC), and the one way a thread
// waits: for a while, or until its stop is requested. Thread-safe.

#include <chrono>
#include <cstdint>
#include <stop_token>
#include <string>

namespace denormd {

// Now, in milliseconds since the Unix epoch.
inline std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Now, in milliseconds of the steady clock (for deadlines; not a calendar time).
inline std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sleeps for `d` unless `stop` is requested first (then returns at once); false when stopped.
bool sleep_unless_stopped(std::stop_token stop, std::chrono::milliseconds d);

enum class iso_millis {
  always,       // "2026-11-21T20:41:12.000Z": fixed width, for logs and reports
  when_nonzero  // "2026-11-21T20:41:12Z": Extended JSON's relaxed dates
};

// Appends `unix_ms` as "YYYY-MM-DDTHH:MM:SS[.mmm]Z" (times before 1970 round down, so the
// milliseconds are never negative).
void append_iso8601(std::string& out, std::int64_t unix_ms, iso_millis millis = iso_millis::always);
std::string iso8601(std::int64_t unix_ms, iso_millis millis = iso_millis::always);

}  // namespace denormd
