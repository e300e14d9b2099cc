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
// MongoDB's AuthenticationFailed and Unauthorized (error_codes.yml).
inline constexpr std::uint32_t authentication_failed_code = 18;
inline constexpr std::uint32_t unauthorized_code = 13;

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
  // The server refused the credentials (18; libmongoc's own "Authentication failed" is
  // reported as this): nothing works until the URI or the user's password changes.
  bool authentication_failed() const;
  // The user's roles lack a privilege the command needs (13 Unauthorized).
  bool unauthorized() const;
  // Either: the operator's to fix (credentials or roles), said as an error, not a warning.
  bool refused() const { return authentication_failed() || unauthorized(); }
  // For an Unauthorized error, the privilege the command needs in plain words ("update on
  // shop.orders", "changeStream and find on shop.hosts", "listCollections on the database
  // shop"), read from MongoDB's message ("not authorized on shop to execute command { update:
  // "orders", ... }"); "" when the message does not say.
  std::string needed_privilege() const;
  // "network", or the code as text: the `code` label of denormd_errors_total.
  std::string metric_code() const;
  // For logs and states; an Unauthorized error starts with the privilege it needs and quotes
  // at most the first 300 characters of the server's message (which echoes the command).
  std::string to_string() const;
};

template <class T>
using result = expected<T, driver_error>;
using status = expected<void, driver_error>;

inline unexpected<driver_error> failure(driver_error e) {
  return {std::move(e)};
}

}  // namespace denormd::mongo
