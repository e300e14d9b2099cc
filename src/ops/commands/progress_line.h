#pragma once
// Backfill progress as numbers, and its one-line rendering for a terminal or a log. Pure.

#include <cstdint>
#include <optional>
#include <string>

namespace denormd::ops {

struct backfill_progress {
  std::string mapping;
  std::uint64_t documents = 0;         // walked so far, including the runs this one continues
  std::uint64_t run_documents = 0;     // walked by this run
  std::optional<std::uint64_t> total;  // documents to walk, counted when the mapping started
  double elapsed_seconds = 0;          // of this run, for this mapping
  bool done = false;
};

// Documents per second of this run (0 before the first second has any).
double rate_per_second(const backfill_progress& p);
// Seconds left at the current rate; nullopt without a total or a rate.
std::optional<double> eta_seconds(const backfill_progress& p);

// 1234567 -> "1,234,567".
std::string format_count(std::uint64_t n);
// 5 -> "5s", 185 -> "3m05s", 7260 -> "2h01m".
std::string format_duration(double seconds);
// "orders-customer: 12,000/20,000 documents (60%), 3,400/s, ETA 2s"
std::string progress_line(const backfill_progress& p);

}  // namespace denormd::ops
