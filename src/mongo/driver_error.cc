#include "mongo/driver_error.h"

#include <algorithm>

namespace denormd::mongo {

bool driver_error::has_label(std::string_view label) const {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

bool driver_error::transient() const {
  if (from == origin::network) return true;
  if (has_label("RetryableWriteError") || has_label("ResumableChangeStreamError") ||
      has_label("TransientTransactionError")) {
    return true;
  }
  // Server codes the specifications treat as "try again": network-ish, elections,
  // shutdowns, not-primary, time limits.
  static constexpr std::uint32_t transient_codes[] = {
      6,  7,   89,    91,  189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
      63, 150, 13388, 234, 133, 43,  50,   64,    112,   117,   251};
  return from == origin::server && std::find(std::begin(transient_codes), std::end(transient_codes),
                                             code) != std::end(transient_codes);
}

bool driver_error::history_lost() const {
  return from == origin::server && (code == 286 || code == 280 || code == 260);
}

std::string driver_error::metric_code() const {
  if (from == origin::network) return "network";
  if (from == origin::client && code == lease_fenced_code) return "lease_fenced";
  if (from == origin::client && code == lease_expired_code) return "lease_expired";
  if (from == origin::client && code == lease_moved_code) return "lease_moved";
  return std::to_string(code);
}

std::string driver_error::to_string() const {
  std::string s = message;
  if (from == origin::network) {
    s += " (network)";
  } else if (code != 0) {
    s += " (code " + std::to_string(code) + ")";
  }
  for (const auto& l : labels)
    s += " [" + l + "]";
  return s;
}

}  // namespace denormd::mongo
