#pragma once
// The HTTP port's security as the web config file says (http/web_config.h): the TLS context
// new connections use, and the users and headers each request is checked and answered with.
// Like exporter-toolkit, which reads the file on every request and certificates on every
// connection, it follows the file: at a new connection or request, at most once a second, it
// looks whether the file or a certificate, key or CA file it names changed (inode, size or
// modification time) and if so reads them again. A changed file that is invalid, or that adds
// or removes tls_server_config (the port's protocol is fixed while it listens), is refused:
// the settings in force stay, and the log says why once per change.
//
// Lifecycle: open() reads everything once (an error there is a start-up error); the object
// lives as long as the server using it. Thread-safety: every member may be called from any
// thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "common/expected.h"
#include "http/basic_auth.h"
#include "http/web_config.h"

namespace denormd::http {

class web_security {
 public:
  // What one reading of the files gave.
  struct settings {
    web_config config;
    std::shared_ptr<boost::asio::ssl::context> tls;  // null without tls_server_config
  };

  // `recheck`: how often the files are looked at.
  static expected<std::shared_ptr<web_security>> open(
      std::string path, std::chrono::milliseconds recheck = std::chrono::seconds(1));

  // Whether the port speaks TLS: decided by the first reading, for the object's life.
  bool tls() const { return tls_; }
  const std::string& path() const { return path_; }
  // The settings in force, read again first when a file changed (see above).
  std::shared_ptr<const settings> current();
  basic_auth& auth() { return auth_; }

  // A request whose credentials were wrong or malformed: counted, and logged at most once
  // every 10 s with the number since the last line, so a guessing client cannot flood the log.
  void failed_login(std::string_view user, std::string_view remote);

 private:
  struct file_stamp {
    std::string path;
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const file_stamp&) const = default;
  };

  web_security(std::string path, std::chrono::milliseconds recheck, bool tls,
               std::shared_ptr<const settings> s);
  static expected<std::shared_ptr<const settings>> read(const std::string& path);
  static std::vector<file_stamp> stamps_of(const std::string& path, const settings& s);
  void reload_locked(std::vector<file_stamp> now);

  const std::string path_;
  const std::chrono::milliseconds recheck_;
  const bool tls_;
  basic_auth auth_;

  std::mutex mutex_;  // guards the members below
  std::shared_ptr<const settings> current_;
  std::vector<file_stamp> stamps_;   // of the files the settings in force were read from
  std::vector<file_stamp> refused_;  // of a change refused, so that it is logged once
  std::chrono::steady_clock::time_point checked_;
  std::uint64_t failures_ = 0;  // failed logins not logged yet
  std::chrono::steady_clock::time_point failure_logged_{};
  bool failure_ever_logged_ = false;
};

}  // namespace denormd::http
