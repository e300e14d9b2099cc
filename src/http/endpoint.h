#pragma once
// The daemon's HTTP endpoint on a thread of its own: an http_server serving the routes it is
// given, over an io_context this owns, so nothing else the daemon does rides on it.
//
// Lifecycle: start() binds and listens (a bad address or a port in use is an error value)
// and starts the thread; stop() closes the listener and every connection and joins the
// thread; the destructor stops. Thread-safety: port() from any thread, start() and stop()
// from one; the handlers are called on the endpoint's thread, concurrently with the caller.

#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "common/expected.h"
#include "http/http_server.h"

namespace denormd::http {

class endpoint {
 public:
  // `security`: TLS, basic auth and headers from a web config file; null: plain and open.
  static expected<std::unique_ptr<endpoint>> start(
      std::string_view address, route_table routes,
      std::shared_ptr<web_security> security = nullptr);
  ~endpoint();
  endpoint(const endpoint&) = delete;
  endpoint& operator=(const endpoint&) = delete;

  // The bound port, also when the address asked for port 0.
  std::uint16_t port() const { return server_->port(); }
  // Idempotent.
  void stop();

 private:
  endpoint() = default;

  boost::asio::io_context io_;
  std::unique_ptr<http_server> server_;
  std::thread thread_;
};

}  // namespace denormd::http
