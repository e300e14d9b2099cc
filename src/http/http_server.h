#pragma once
// The HTTP endpoint beside the daemon: GET /metrics, /healthz and /readyz (docs/metrics.md),
// POST /-/reload when the owner serves reloads (README, "Changing mappings"), and GET /applied
// (read-your-writes through the copies; README, "Waiting for the copies"), on
// Boost.Beast over whatever threads run the given io_context.
//
// Lifecycle: create() parses the address and binds and listens (so a bad address or a port in
// use is reported at start-up), start() begins accepting, stop() closes the listener and every
// open connection. The destructor stops. Thread-safety: start(), stop() and port() may be
// called from any thread; each connection runs on its own strand, and the callbacks are called
// concurrently from the io_context's threads, so they must be thread-safe. Nothing blocks an
// io_context thread but the callbacks, so one thread serves every connection; idle ones cost
// a descriptor and a few KB each, never a thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>

#include "common/expected.h"

namespace denormd::http {

// What /readyz reports; `detail` lists what is not ready (one item per line works best).
struct readiness {
  bool ready = false;
  std::string detail;
};

// A parsed "host:port"; host is an IPv4 or IPv6 address (IPv6 in brackets) or "localhost".
struct listen_address {
  std::string host;
  std::uint16_t port = 0;
};
expected<listen_address> parse_listen_address(std::string_view text);

// How a reload asked for over HTTP ended; `message` says what failed.
struct reload_outcome {
  bool ok = false;
  std::string message;
};

// A cluster time (seconds, increment), as GET /applied takes and reports it.
struct op_time {
  std::uint32_t t = 0;
  std::uint32_t i = 0;
  auto operator<=>(const op_time&) const = default;
};

// A parsed GET /applied query: `after=T[:I]`, optional `mapping=NAME`, `timeout=SECONDS`.
struct applied_query {
  op_time after;
  std::string mapping;  // "" = every mapping
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};
// The error names the parameter and the value.
expected<applied_query> parse_applied_query(std::string_view query);

class http_server {
 public:
  using metrics_callback = std::function<std::string()>;
  using readiness_callback = std::function<readiness()>;
  // Asks for a reload and returns at once; `done` is called once, from any thread, when it
  // has run (the request waits for it, the other connections do not).
  using reload_callback = std::function<void(std::function<void(reload_outcome)> done)>;
  // Through when mapping `name` ("" = every mapping) has applied everything it reads; nullopt
  // when no running mapping has that name.
  using applied_callback = std::function<std::optional<op_time>(std::string_view name)>;

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
  };

  // `address` is "host:port"; port 0 picks a free port (see port()).
  static expected<std::unique_ptr<http_server>> create(boost::asio::io_context& io,
                                                       std::string_view address,
                                                       metrics_callback metrics,
                                                       readiness_callback ready);
  static expected<std::unique_ptr<http_server>> create(boost::asio::io_context& io,
                                                       std::string_view address,
                                                       metrics_callback metrics,
                                                       readiness_callback ready,
                                                       const options& opts);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Serves POST (or PUT) /-/reload with `reload`; without, that path is not served. Call
  // before start().
  void set_reload(reload_callback reload);
  // Serves GET /applied with `applied`: 200 once it reports at least `after`, 408 when it has
  // not within `timeout` (checked every 20 ms; other connections are served meanwhile), 404 for
  // an unknown mapping, 400 for a bad query. Call before start().
  void set_applied(applied_callback applied);
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
  explicit http_server(std::shared_ptr<state> s);
  std::shared_ptr<state> state_;
};

}  // namespace denormd::http
