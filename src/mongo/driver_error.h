#pragma once
// A failure reported by the driver or the server, as a value: where it came from, the
// server's code and error labels, and what denormd should do about it.

#include <cstdint>
#include <string>
#include <vector>

#include "common/expected.h"

namespace denormd::mongo {

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
