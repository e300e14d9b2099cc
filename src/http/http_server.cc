#include "http/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "http/basic_auth.h"
#include "http/job_thread.h"
#include "http/web_security.h"

namespace denormd::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

constexpr beast::string_view text_content_type = "text/plain; charset=utf-8";
// After an error response the rest of the request is read and dropped for a short while, so
// that closing with unread data does not reset the connection before the client has read
// the response.
constexpr auto linger_timeout = std::chrono::seconds(2);
constexpr std::size_t linger_max_bytes = 64 * 1024;
// After a failed accept (out of descriptors, say) the next one waits this long, so that the
// acceptor does not spin on an error that persists.
constexpr auto accept_retry_delay = std::chrono::milliseconds(50);

denormd::unexpected<denormd::error> bad_address(std::string_view text, std::string_view why) {
  return fail("invalid listen address \"" + std::string(text) + "\": " + std::string(why) +
              " (expected HOST:PORT, for example 127.0.0.1:9464 or 0.0.0.0:9464)");
}

}  // namespace

expected<listen_address> parse_listen_address(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad_address(text, "missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':')
      return bad_address(text, "missing ':PORT' after ']'");
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad_address(text, "missing ':PORT'");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return bad_address(text, "an IPv6 address must be written in brackets, as [::1]:9464");
  }
  if (host.empty()) return bad_address(text, "missing host (use 0.0.0.0 for every interface)");
  if (port.empty()) return bad_address(text, "missing port");
  if (port.size() > 5) return bad_address(text, "port out of range 0-65535");
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad_address(text, "port is not a number");
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return bad_address(text, "port out of range 0-65535");
  if (host != "localhost") {
    error_code ec;
    net::ip::make_address(std::string(host), ec);
    if (ec) return bad_address(text, "host is not an IP address or localhost");
  }
  return listen_address{std::string(host), static_cast<std::uint16_t>(value)};
}

struct http_server::state : std::enable_shared_from_this<state> {
  state(net::io_context& context, const options& o, route_table r)
      : io(context),
        acceptor(net::make_strand(context)),
        accept_retry(acceptor.get_executor()),
        opts(o),
        routes(std::move(r)),
        slow(o.security ? std::make_unique<job_thread>() : nullptr) {}

  void do_accept();
  void on_accept(error_code ec, tcp::socket socket);
  std::shared_ptr<session> make_session(tcp::socket&& socket,
                                        std::shared_ptr<ssl::context> tls_context);
  void stop();

  // A session tells when it starts waiting for a request (false: it was evicted meanwhile
  // and should close) and when it has one to answer (false likewise).
  bool waiting(session* s);
  bool busy(session* s);
  void remove(session* s);

  net::io_context& io;
  tcp::acceptor acceptor;          // used only on its strand
  net::steady_timer accept_retry;  // likewise
  const options opts;
  const route_table routes;
  // With opts.security: where the bcrypt checks run (one at a time, as exporter-toolkit
  // runs them); its queue holds at most one request per open connection.
  const std::unique_ptr<job_thread> slow;
  std::uint16_t port = 0;

  struct entry {
    std::weak_ptr<session> self;
    std::list<session*>::iterator idle_pos;
    bool in_idle = false;
    bool counted = true;  // false once evicted: it is closing and no longer holds a place
  };

  std::mutex mutex;  // guards the members below
  bool started = false;
  bool stopped = false;
  std::unordered_map<session*, entry> sessions;
  // The connections waiting for a request, longest wait first: the ones a new connection
  // over the limit closes. A connection between reading a request and writing its
  // response is busy and not in it.
  std::list<session*> idle;
  std::size_t counted = 0;

 private:
  // Takes the longest-waiting connection off the books; the caller closes it (if it is
  // not already being destroyed) once the mutex is released.
  std::shared_ptr<session> evict_oldest_idle_locked();
  void leave_idle_locked(entry& e);
};

// What the server and the replies need of a connection, whatever it runs over.
class http_server::session : public std::enable_shared_from_this<session> {
 public:
  explicit session(std::shared_ptr<state> owner) : owner_(std::move(owner)) {}
  virtual ~session() { owner_->remove(this); }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  virtual void run() = 0;
  // From any thread.
  virtual void close() = 0;
  virtual net::any_io_executor executor() = 0;
  // On the strand: the handler's answer to the request being served, and its wait.
  virtual void answer(response r) = 0;
  virtual void wait(std::chrono::milliseconds delay, std::function<void()> then,
                    std::shared_ptr<session_reply> to) = 0;

 protected:
  const std::shared_ptr<state> owner_;
};

// The reply to one request: its answer goes to the session's strand, once.
class http_server::session_reply final : public reply,
                                         public std::enable_shared_from_this<session_reply> {
 public:
  explicit session_reply(std::shared_ptr<session> s) : session_(std::move(s)) {}
  void send(response r) override;
  void after(std::chrono::milliseconds delay, std::function<void()> then) override;

 private:
  const std::shared_ptr<session> session_;
  std::atomic<bool> answered_{false};
};

using plain_stream = beast::tcp_stream;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

// One connection: read a request, answer it, repeat while keep-alive; over TLS (tls_stream)
// once the handshake is done. Every handler runs on the connection's strand; close() may be
// called from any thread.
template <class Stream>
class http_server::connection final : public session {
  static constexpr bool is_tls = std::is_same_v<Stream, tls_stream>;
  using settings_ptr = std::shared_ptr<const web_security::settings>;

 public:
  // `ctx`: the TLS context, for a tls_stream only.
  connection(tcp::socket&& socket, std::shared_ptr<state> owner, std::shared_ptr<ssl::context> ctx)
      : session(std::move(owner)),
        ctx_(std::move(ctx)),
        stream_(make_stream(std::move(socket), ctx_.get())),
        buffer_(static_cast<std::size_t>(owner_->opts.header_limit + owner_->opts.body_limit) +
                4096) {
    error_code ec;
    const auto peer = lowest().socket().remote_endpoint(ec);
    if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
  }

  void run() override {
    net::dispatch(stream_.get_executor(), [self = self()] { self->begin(); });
  }

  net::any_io_executor executor() override { return stream_.get_executor(); }

  void close() override {
    net::post(stream_.get_executor(), [self = self()] {
      self->closed_ = true;
      self->lowest().close();  // also cancels the timer; pending handlers see operation_aborted
      self->wait_.cancel();
    });
  }

  void answer(response r) override {
    if (closed_) return;
    res_.result(r.status);
    res_.set(http::field::content_type, r.content_type);
    res_.body() = std::move(r.body);
    add_configured_headers();
    res_.prepare_payload();
    if (head_) res_.body().clear();  // Content-Length stays that of the GET
    write(false);
  }

  // The wait holds the reply, so that a `then` that throws is answered.
  void wait(std::chrono::milliseconds delay, std::function<void()> then,
            std::shared_ptr<session_reply> to) override {
    if (closed_) return;
    wait_.expires_after(delay);
    wait_.async_wait([self = self(), then = std::move(then), to = std::move(to)](error_code ec) {
      if (ec || self->closed_) return;
      guarded(*to, then);
    });
  }

 private:
  static Stream make_stream(tcp::socket&& socket, ssl::context* ctx) {
    if constexpr (is_tls) {
      return Stream(std::move(socket), *ctx);
    } else {
      return Stream(std::move(socket));
    }
  }

  std::shared_ptr<connection> self() {
    return std::static_pointer_cast<connection>(shared_from_this());
  }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void begin() {
    if constexpr (is_tls) {
      // The client is awaited as for a request: a slow handshake may be evicted likewise.
      if (!owner_->waiting(this)) return shutdown();
      lowest().expires_after(owner_->opts.header_timeout);
      beast::async_detect_ssl(lowest(), buffer_, [self = self()](error_code ec, bool tls) {
        self->on_detect(ec, tls);
      });
    } else {
      read();
    }
  }

  void on_detect(error_code ec, bool tls) {
    if (closed_) return;
    if (ec) return shutdown();
    if (!tls) return refuse_plain();
    stream_.async_handshake(ssl::stream_base::server, buffer_.data(),
                            [self = self()](error_code hec, std::size_t used) {
                              if (self->closed_) return;
                              if (hec) return self->shutdown();
                              self->handshaken_ = true;
                              self->buffer_.consume(used);
                              self->read();
                            });
  }

  // Plain HTTP on the HTTPS port: told so in plain HTTP, as Go's servers (and so the
  // exporters) tell it, then closed.
  void refuse_plain() {
    static const std::string text = [] {
      const std::string body = "Client sent an HTTP request to an HTTPS server.\n";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
             "Connection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    lowest().expires_after(owner_->opts.write_timeout);
    net::async_write(lowest(), net::buffer(text), [self = self()](error_code ec, std::size_t) {
      if (self->closed_) return;
      if (ec) return self->shutdown();
      self->drain_plain();
    });
  }

  // The header has a short deadline of its own; the rest of the request gets what is left of
  // the whole-request timeout.
  void read() {
    if (closed_) return;
    if (!owner_->waiting(this)) return shutdown();
    parser_.emplace();
    parser_->header_limit(owner_->opts.header_limit);
    parser_->body_limit(owner_->opts.body_limit);
    const auto now = std::chrono::steady_clock::now();
    request_deadline_ = now + owner_->opts.read_timeout;
    lowest().expires_at(std::min(now + owner_->opts.header_timeout, request_deadline_));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&connection::on_header, self()));
  }

  void on_header(error_code ec, std::size_t bytes) {
    if (closed_) return;
    if (ec) return on_read(ec, bytes);
    lowest().expires_at(request_deadline_);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&connection::on_read, self()));
  }

  void on_read(error_code ec, std::size_t /*bytes*/) {
    if (closed_) return;
    // Whatever the outcome, the connection no longer waits; one evicted meanwhile just closes.
    if (!owner_->busy(this)) return shutdown();
    if (!ec) return respond(parser_->get());
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
      return respond_error(http::status::request_header_fields_too_large,
                           "request header too large\n");
    if (ec == http::error::body_limit)
      return respond_error(http::status::payload_too_large, "request body too large\n");
    if (ec.category() == beast::http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message)
      return respond_error(http::status::bad_request, "bad request\n");
    // The client closed, timed out (tcp_stream has closed the socket) or the socket failed.
    shutdown();
  }

  void respond(const http::request<http::string_body>& req) {
    res_ = {};
    res_.version(req.version());
    res_.keep_alive(req.keep_alive());
    head_ = req.method() == http::verb::head;
    settings_ = owner_->opts.security ? owner_->opts.security->current() : nullptr;
    if (settings_ && !settings_->config.users.empty()) return authenticate(req);
    route(req);
  }

  // Basic auth before any route, so that an unknown path tells nothing either. A check that
  // needs bcrypt runs on the server's slow thread; the connection reads nothing meanwhile.
  void authenticate(const http::request<http::string_body>& req) {
    web_security& security = *owner_->opts.security;
    const auto header = req[http::field::authorization];
    if (header.empty()) return unauthorized();
    auto given = basic_auth::parse_header(std::string_view(header.data(), header.size()));
    if (!given) {
      security.failed_login("", remote_);
      return unauthorized();
    }
    if (security.auth().remembered(settings_->config.users, *given)) return route(req);
    auto check = [self = self(), settings = settings_, given = std::move(*given)] {
      web_security& sec = *self->owner_->opts.security;
      const bool ok = sec.auth().verify(settings->config.users, given);
      if (!ok) sec.failed_login(given.user, self->remote_);
      net::post(self->stream_.get_executor(), [self, ok] { self->authenticated(ok); });
    };
    if (!owner_->slow->post(std::move(check))) shutdown();  // the server is stopping
  }

  void authenticated(bool ok) {
    if (closed_) return;
    if (!ok) return unauthorized();
    route(parser_->get());
  }

  void unauthorized() {
    res_.set(http::field::www_authenticate, "Basic realm=\"denormd\"");
    answer({401, std::string(text_content_type), "unauthorized\n"});
  }

  void route(const http::request<http::string_body>& req) {
    // Beast 1.74 uses boost::string_view.
    const std::string_view target(req.target().data(), req.target().size());
    const auto question = target.find('?');
    const request r{
        std::string_view(req.method_string().data(), req.method_string().size()),
        target.substr(0, question),
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1),
        req.body()};
    const auto found = owner_->routes.find(r.method, r.path);
    if (found.serve == nullptr) {
      if (found.allow.empty()) return answer({404, std::string(text_content_type), "not found\n"});
      res_.set(http::field::allow, found.allow);
      return answer({405, std::string(text_content_type), "method not allowed\n"});
    }
    auto to = std::make_shared<session_reply>(shared_from_this());
    guarded(*to, [&] { (*found.serve)(r, to); });
  }

  // A handler that throws must not take down the io_context's thread: unless it has answered
  // already, the answer is 500.
  template <class F>
  static void guarded(reply& to, F&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      to.send(
          {500, std::string(text_content_type), std::string("internal error: ") + e.what() + "\n"});
    } catch (...) {
      to.send({500, std::string(text_content_type), "internal error\n"});
    }
  }

  // http_server_config.headers of the web config file, on every answer.
  void add_configured_headers() {
    if (!owner_->opts.security) return;
    const settings_ptr s = settings_ ? settings_ : owner_->opts.security->current();
    for (const auto& [name, value] : s->config.headers)
      res_.set(name, value);
  }

  void respond_error(http::status status, std::string body) {
    res_ = {};
    res_.version(11);
    res_.keep_alive(false);
    res_.result(status);
    res_.set(http::field::content_type, text_content_type);
    res_.body() = std::move(body);
    add_configured_headers();
    res_.prepare_payload();
    write(true);
  }

  void write(bool linger) {
    lowest().expires_after(owner_->opts.write_timeout);
    http::async_write(stream_, res_, [self = self(), linger](error_code ec, std::size_t) {
      self->on_write(ec, linger);
    });
  }

  void on_write(error_code ec, bool linger) {
    if (closed_) return;
    if (ec) return shutdown();
    if (linger) return start_linger();
    if (!res_.keep_alive()) return shutdown();
    read();
  }

  void start_linger() {
    // Answered, only draining: a new connection over the limit may close this one.
    if (!owner_->waiting(this)) return shutdown();
    // Over TLS the close_notify exchange (shutdown) is the drain.
    if constexpr (is_tls) return shutdown();
    drain_plain();
  }

  // Half-closes and reads what the client still sends for a while, so that closing with
  // unread data does not reset the connection before the client has read the answer.
  void drain_plain() {
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().expires_after(linger_timeout);
    drain();
  }

  void drain() {
    lowest().async_read_some(net::buffer(drain_), [self = self()](error_code ec, std::size_t n) {
      if (self->closed_) return;
      self->drained_ += n;
      if (ec || self->drained_ > linger_max_bytes) return self->shutdown();
      self->drain();
    });
  }

  void shutdown() {
    closed_ = true;
    if constexpr (is_tls) {
      if (std::exchange(handshaken_, false)) {
        // close_notify, and the client's for a while; then the socket closes either way.
        lowest().expires_after(linger_timeout);
        stream_.async_shutdown([self = self()](error_code) { self->lowest().close(); });
        return;
      }
    }
    error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().close();
  }

  const std::shared_ptr<ssl::context> ctx_;  // outlives stream_, which uses it
  Stream stream_;
  beast::flat_buffer buffer_;
  std::string remote_;  // "address:port" of the client, for the log
  bool handshaken_ = false;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::chrono::steady_clock::time_point request_deadline_;
  http::response<http::string_body> res_;
  settings_ptr settings_;  // the web config in force for the request being served
  std::array<char, 4096> drain_{};
  std::size_t drained_ = 0;
  bool closed_ = false;
  // The request being served: a HEAD (answered without a body), and its wait.
  bool head_ = false;
  net::steady_timer wait_{stream_.get_executor()};
};

void http_server::session_reply::send(response r) {
  if (answered_.exchange(true)) return;
  net::dispatch(session_->executor(),
                [s = session_, r = std::move(r)]() mutable { s->answer(std::move(r)); });
}

void http_server::session_reply::after(std::chrono::milliseconds delay,
                                       std::function<void()> then) {
  net::dispatch(session_->executor(),
                [s = session_, delay, then = std::move(then), to = shared_from_this()]() mutable {
                  s->wait(delay, std::move(then), std::move(to));
                });
}

void http_server::state::do_accept() {
  acceptor.async_accept(net::make_strand(io),
                        beast::bind_front_handler(&state::on_accept, shared_from_this()));
}

std::shared_ptr<http_server::session> http_server::state::make_session(
    tcp::socket&& socket, std::shared_ptr<ssl::context> tls_context) {
  if (tls_context)
    return std::make_shared<connection<tls_stream>>(std::move(socket), shared_from_this(),
                                                    std::move(tls_context));
  return std::make_shared<connection<plain_stream>>(std::move(socket), shared_from_this(), nullptr);
}

void http_server::state::on_accept(error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted) return;
  // New connections use the certificates in force (read before taking the lock: it may read
  // the files again).
  std::shared_ptr<ssl::context> tls_context;
  if (!ec && opts.security && opts.security->tls()) tls_context = opts.security->current()->tls;
  std::shared_ptr<session> accepted;
  std::shared_ptr<session> evicted;
  {
    std::lock_guard lock(mutex);
    if (stopped) return;  // the socket closes as it goes out of scope
    // Over the limit, or out of descriptors: the longest-waiting connection makes room.
    if (ec || counted >= opts.max_connections) evicted = evict_oldest_idle_locked();
    if (!ec) {
      if (counted >= opts.max_connections) {
        error_code ignored;  // every connection is busy answering: refuse this one
        socket.close(ignored);
      } else {
        accepted = make_session(std::move(socket), std::move(tls_context));
        sessions.emplace(accepted.get(), entry{accepted, {}, false, true});
        ++counted;
      }
    }
  }
  if (evicted) evicted->close();
  if (accepted) accepted->run();
  if (!ec) return do_accept();
  // Accept errors such as running out of descriptors are transient: keep accepting, after a
  // pause so that a lasting one does not keep this strand spinning.
  accept_retry.expires_after(accept_retry_delay);
  accept_retry.async_wait([self = shared_from_this()](error_code wait_ec) {
    if (!wait_ec) self->do_accept();
  });
}

std::shared_ptr<http_server::session> http_server::state::evict_oldest_idle_locked() {
  while (!idle.empty()) {
    auto it = sessions.find(idle.front());
    leave_idle_locked(it->second);
    it->second.counted = false;
    --counted;
    // A session whose last reference is going away is closing already.
    if (auto s = it->second.self.lock()) return s;
  }
  return nullptr;
}

void http_server::state::leave_idle_locked(entry& e) {
  if (!e.in_idle) return;
  idle.erase(e.idle_pos);
  e.in_idle = false;
}

bool http_server::state::waiting(session* s) {
  std::lock_guard lock(mutex);
  entry& e = sessions.at(s);
  if (!e.counted) return false;
  leave_idle_locked(e);
  e.idle_pos = idle.insert(idle.end(), s);
  e.in_idle = true;
  return true;
}

bool http_server::state::busy(session* s) {
  std::lock_guard lock(mutex);
  entry& e = sessions.at(s);
  leave_idle_locked(e);
  return e.counted;
}

void http_server::state::remove(session* s) {
  std::lock_guard lock(mutex);
  const auto it = sessions.find(s);
  if (it == sessions.end()) return;
  leave_idle_locked(it->second);
  if (it->second.counted) --counted;
  sessions.erase(it);
}

void http_server::state::stop() {
  std::vector<std::shared_ptr<session>> open;
  {
    std::lock_guard lock(mutex);
    if (stopped) return;
    stopped = true;
    for (auto& [ptr, e] : sessions)
      if (auto s = e.self.lock()) open.push_back(std::move(s));
  }
  net::post(acceptor.get_executor(), [self = shared_from_this()] {
    error_code ignored;
    self->acceptor.close(ignored);
    self->accept_retry.cancel();
  });
  for (auto& s : open)
    s->close();
  // Waits for a bcrypt check under way: none posts to the io_context after this.
  if (slow) slow->stop();
}

expected<std::unique_ptr<http_server>> http_server::create(net::io_context& io,
                                                           std::string_view address,
                                                           route_table routes) {
  return create(io, address, std::move(routes), options{});
}

expected<std::unique_ptr<http_server>> http_server::create(net::io_context& io,
                                                           std::string_view address,
                                                           route_table routes,
                                                           const options& opts) {
  auto parsed = parse_listen_address(address);
  if (!parsed) return parsed.error();
  error_code ec;
  const auto ip = parsed->host == "localhost" ? net::ip::address(net::ip::address_v4::loopback())
                                              : net::ip::make_address(parsed->host, ec);
  if (ec) return bad_address(address, ec.message());
  const tcp::endpoint endpoint(ip, parsed->port);

  auto s = std::make_shared<state>(io, opts, std::move(routes));
  auto failed = [&](std::string_view what) {
    return fail("cannot listen on " + std::string(address) + ": " + std::string(what) + ": " +
                ec.message());
  };
  if (s->acceptor.open(endpoint.protocol(), ec); ec) return failed("open");
  if (s->acceptor.set_option(net::socket_base::reuse_address(true), ec); ec)
    return failed("SO_REUSEADDR");
  if (s->acceptor.bind(endpoint, ec); ec) return failed("bind");
  if (s->acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return failed("listen");
  const auto local = s->acceptor.local_endpoint(ec);
  if (ec) return failed("local address");
  s->port = local.port();
  return std::unique_ptr<http_server>(new http_server(std::move(s)));
}

http_server::http_server(std::shared_ptr<state> s) : state_(std::move(s)) {}

http_server::~http_server() {
  stop();
}

void http_server::start() {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->started || state_->stopped) return;
    state_->started = true;
  }
  net::post(state_->acceptor.get_executor(), [s = state_] { s->do_accept(); });
}

void http_server::stop() {
  state_->stop();
}

std::uint16_t http_server::port() const {
  return state_->port;
}

}  // namespace denormd::http
