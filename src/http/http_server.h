#pragma once
// An HTTP/1.1 server on Boost.Beast over whatever threads run the given io_context, serving
// the routes its owner registered (http/route_table.h); the daemon's are registered by app
// (docs/metrics.md; docs/running.md, "Changing mappings" and "Waiting for the copies").
//
// Lifecycle: create() parses the address and binds and listens (so a bad address or a port in
// use is reported at start-up), start() begins accepting, stop() closes the listener and every
// open connection. The destructor stops. Thread-safety: start(), stop() and port() may be
// called from any thread; each connection runs on its own strand, and the handlers are called
// concurrently from the io_context's threads, so they must be thread-safe. Nothing blocks an
// io_context thread but the handlers, so one thread serves every connection; idle ones cost
// a descriptor and a few KB each, never a thread. With a web config file (options::security)
// the port speaks HTTPS only and asks every request for basic auth; the bcrypt checks run on
// a thread of the server's own, so a client guessing passwords does not hold the others up.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>

#include "common/expected.h"
#include "http/route_table.h"

namespace denormd::http {

class web_security;

// A parsed "host:port"; host is an IPv4 or IPv6 address (IPv6 in brackets) or "localhost".
struct listen_address {
  std::string host;
  std::uint16_t port = 0;
};
expected<listen_address> parse_listen_address(std::string_view text);

class http_server {
 public:
  struct options {
    // Longest wait for a request's header: from the connection's start, or from the previous
    // response on a keep-alive connection. Short, so that idle and slowloris clients (a header
    // byte now and then) give their connection back quickly; scrapers and probes send their
    // whole request at once.
    std::chrono::milliseconds header_timeout{std::chrono::seconds(2)};
    // Longest wait for a whole request, header and body, counted from the same start.
    std::chrono::milliseconds read_timeout{std::chrono::seconds(10)};
    // Longest wait for a response to be written.
    std::chrono::milliseconds write_timeout{std::chrono::seconds(10)};
    std::uint32_t header_limit = 8 * 1024;
    std::uint64_t body_limit = 8 * 1024;
    // Open connections, far more than a scraper and the probes need. A new connection over
    // the limit closes the connection that has waited longest for a request (idle or slow);
    // it is refused only when every open connection is busy answering a request.
    std::size_t max_connections = 256;
    // TLS, basic auth and extra headers as a web config file says (http/web_security.h);
    // null: plain HTTP, open to every client.
    std::shared_ptr<web_security> security;
  };

  // `address` is "host:port"; port 0 picks a free port (see port()).
  static expected<std::unique_ptr<http_server>> create(boost::asio::io_context& io,
                                                       std::string_view address,
                                                       route_table routes);
  static expected<std::unique_ptr<http_server>> create(boost::asio::io_context& io,
                                                       std::string_view address, route_table routes,
                                                       const options& opts);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Begins accepting connections; has no effect after stop().
  void start();
  // Closes the listener and every connection; returns at once, the closes run on the
  // io_context. Idempotent.
  void stop();
  // The bound port, also when the address asked for port 0.
  std::uint16_t port() const;

 private:
  // Shared with the io_context's pending handlers, which may outlive this object.
  struct state;
  class session;
  template <class Stream>
  class connection;
  class session_reply;
  explicit http_server(std::shared_ptr<state> s);
  std::shared_ptr<state> state_;
};

}  // namespace denormd::http
