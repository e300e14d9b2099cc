#include "common/clock.h"

#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace denormd {

bool sleep_unless_stopped(std::stop_token stop, std::chrono::milliseconds d) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

void append_iso8601(std::string& out, std::int64_t unix_ms, iso_millis millis) {
  std::int64_t secs = unix_ms / 1000;
  std::int64_t ms = unix_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    --secs;
  }
  const auto t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];  // room for any int the format could print
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  out.append(buf, static_cast<std::size_t>(n));
  if (ms != 0 || millis == iso_millis::always) {
    n = std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(ms));
    out.append(buf, static_cast<std::size_t>(n));
  }
  out += 'Z';
}

std::string iso8601(std::int64_t unix_ms, iso_millis millis) {
  std::string out;
  append_iso8601(out, unix_ms, millis);
  return out;
}

}  // namespace denormd
