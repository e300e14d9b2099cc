#include "ops/commands/progress_line.h"

#include <algorithm>
#include <cmath>

namespace denormd::ops {

double rate_per_second(const backfill_progress& p) {
  if (p.elapsed_seconds <= 0) return 0;
  return static_cast<double>(p.run_documents) / p.elapsed_seconds;
}

std::optional<double> eta_seconds(const backfill_progress& p) {
  const double rate = rate_per_second(p);
  if (!p.total || rate <= 0) return std::nullopt;
  // The collection may have grown since it was counted: never a negative time.
  const double left = *p.total > p.documents ? static_cast<double>(*p.total - p.documents) : 0.0;
  return left / rate;
}

std::string format_count(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<std::uint64_t>(std::llround(std::max(0.0, seconds)));
  auto two = [](std::uint64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + two(s / 60 % 60) + "m";
}

std::string progress_line(const backfill_progress& p) {
  std::string line = p.mapping + ": " + format_count(p.documents);
  if (p.total && !p.done) {
    line += "/" + format_count(*p.total);
  }
  line += " documents";
  if (p.total && *p.total > 0 && !p.done) {
    const auto percent = std::min<std::uint64_t>(100, p.documents * 100 / *p.total);
    line += " (" + std::to_string(percent) + "%)";
  }
  line += ", " + format_count(static_cast<std::uint64_t>(std::llround(rate_per_second(p)))) + "/s";
  if (p.done) {
    line += ", done in " + format_duration(p.elapsed_seconds);
  } else if (auto eta = eta_seconds(p)) {
    line += ", ETA " + format_duration(*eta);
  }
  return line;
}

}  // namespace denormd::ops
