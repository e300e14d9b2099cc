#pragma once
// A failure reported by the driver or the server, as a value: where it came from, the
// server's code and error labels, and what denormd should do about it.

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"

namespace denormd::mongo {

// denormd's own refusals under --ha (origin client), named in metrics as "lease_fenced" (a
// checkpoint under a newer lease), "lease_expired" (a write past the lease's deadline) and
// "lease_moved" (a batch whose fence found the lease another's or expired by the server).
inline constexpr std::uint32_t lease_fenced_code = 900001;
inline constexpr std::uint32_t lease_expired_code = 900002;
inline constexpr std::uint32_t lease_moved_code = 900003;

struct driver_error {
  enum class origin { network, server, client };
  origin from = origin::client;
  std::uint32_t code = 0;  // the server's error code (or libmongoc's, for client errors)
  std::string message;
  std::vector<std::string> labels;

  bool has_label(std::string_view label) const;
  // Worth retrying with backoff: network trouble, elections, shutdowns, retryable labels.
  bool transient() const;
  // The change stream cannot resume from the given point (286, 280, 260).
  bool history_lost() const;
  // "network", or the code as text: the `code` label of denormd_errors_total.
  std::string metric_code() const;
  std::string to_string() const;
};

template <class T>
using result = expected<T, driver_error>;
using status = expected<void, driver_error>;

inline unexpected<driver_error> failure(driver_error e) {
  return {std::move(e)};
}

}  // namespace denormd::mongo
