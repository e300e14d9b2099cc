#pragma once
// HTTP basic authentication against bcrypt hashes (basic_auth_users of the web config file),
// verified with libxcrypt's crypt_rn as exporter-toolkit verifies them: a user not in the list
// costs the same bcrypt run as one in it (against another user's hash), so the time taken does
// not tell which names exist, and the hashes are compared in constant time. bcrypt is slow by
// design (some 70 ms at cost 10), so a successful check is remembered, keyed by a SHA-256 of
// the user, the hash and the password (never the password itself), the newest `capacity`
// ones; a changed hash misses the cache.
//
// Lifecycle: created once per server, lives as long as it. Thread-safety: every member may be
// called from any thread (the cache is guarded by a mutex; verify() runs bcrypt outside it).

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace denormd::http {

struct credentials {
  std::string user;
  std::string password;
};

class basic_auth {
 public:
  using users = std::map<std::string, std::string>;  // name -> bcrypt hash

  explicit basic_auth(std::size_t capacity = 100) : capacity_(capacity) {}

  // What is wrong with `hash` as a bcrypt hash libcrypt can verify ($2a$, $2b$ or $2y$, cost
  // 04 to 31, 60 characters); "" when nothing is.
  static std::string hash_problem(std::string_view hash);
  // The credentials of an Authorization header's value ("Basic dXNlcjpwYXNz"); nullopt when
  // it is another scheme or malformed.
  static std::optional<credentials> parse_header(std::string_view value);

  // Whether these credentials passed verify() against the same hash lately: no bcrypt run.
  bool remembered(const users& list, const credentials& c) const;
  // Runs bcrypt (slow); remembers a success.
  bool verify(const users& list, const credentials& c);

 private:
  // The cache key of `c` checked against `hash`.
  static std::string key_of(const credentials& c, std::string_view hash);

  const std::size_t capacity_;
  mutable std::mutex mutex_;  // guards the members below
  std::unordered_set<std::string> verified_;
  std::deque<std::string> order_;  // oldest first: the one dropped when full
};

}  // namespace denormd::http
