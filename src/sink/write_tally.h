#pragma once
// What a writer counts while it writes (docs/metrics.md: writes, documents modified, apply
// latency, errors, dead letters, fan-out). A plain writer's writes have landed when
// acknowledged, so it counts them at once; inside a fenced transaction they are held until the
// transaction commits, and a transaction that is aborted (then written again another way, or
// retried) publishes nothing, so every write is counted once and only once it has landed. One per
// writer; not thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/metrics.h"

namespace denormd::sink {

class write_tally {
 public:
  // With `hold`, nothing reaches `m` before publish().
  write_tally(metrics::metrics& m, bool hold) : metrics_(m), hold_(hold) {}

  void count_writes(std::string_view mapping, std::string_view result);
  void count_modified(std::string_view mapping, std::uint64_t n);
  void observe_apply_latency(std::string_view mapping, double seconds);
  void count_error(std::string_view stage, std::string_view code);
  void count_deadletter(std::string_view mapping);
  // denormd_fanout: `events` change events that wrote `dependents` documents each.
  void observe_fanout(std::string_view mapping, double dependents, std::uint64_t events);

  // Adds everything held to the metrics and forgets it; clear() only forgets it.
  void publish();
  void clear();

 private:
  enum class what { writes, modified, latency, error, deadletter, fanout };
  struct entry {
    what kind;
    std::string a;
    std::string b;
    double value = 0;
    std::uint64_t events = 0;  // fanout
  };
  void add(entry e);

  metrics::metrics& metrics_;
  const bool hold_;
  std::vector<entry> held_;
};

}  // namespace denormd::sink
