#include "http/http_server.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
// GCC 12 with the sanitizers reports a false maybe-uninitialized inside Beast's response
// parser (a boost::optional it reads only once set); the server uses only the request parser.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace denormd::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

constexpr auto client_limit = 5s;  // no client call in these tests may take longer

// A blocking-style test client whose every call is bounded in time: it runs its own
// io_context with run_for, so a server that never answers fails the test instead of hanging.
class client {
 public:
  explicit client(std::uint16_t port) {
    socket_.connect(tcp::endpoint(net::ip::address_v4::loopback(), port));
  }

  struct reply {
    error_code ec;
    http::response<http::string_body> res;
  };

  reply request(http::verb verb, std::string target, bool keep_alive = true,
                unsigned version = 11) {
    http::request<http::string_body> req{verb, target, static_cast<int>(version)};
    req.set(http::field::host, "localhost");
    req.keep_alive(keep_alive);
    req.prepare_payload();
    reply r;
    http::async_write(socket_, req, [&](error_code ec, std::size_t) { r.ec = ec; });
    finish();
    if (r.ec) return r;
    return read_reply(verb == http::verb::head);
  }

  reply read_reply(bool head = false) {
    reply r;
    http::response_parser<http::string_body> parser;
    parser.skip(head);  // a HEAD response has a Content-Length but no body
    http::async_read(socket_, buffer_, parser, [&](error_code ec, std::size_t) { r.ec = ec; });
    if (!finish()) r.ec = net::error::timed_out;
    if (!r.ec) r.res = parser.release();
    return r;
  }

  error_code send_raw(const std::string& bytes) {
    error_code result;
    net::async_write(socket_, net::buffer(bytes), [&](error_code ec, std::size_t) { result = ec; });
    if (!finish()) return net::error::timed_out;
    return result;
  }

  // Waits until the server closes the connection: eof (or a reset) is the expected result.
  error_code wait_closed(std::chrono::steady_clock::duration limit = client_limit) {
    error_code result;
    std::array<char, 256> scratch{};
    std::function<void(error_code, std::size_t)> on_read;
    on_read = [&](error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      socket_.async_read_some(net::buffer(scratch), on_read);  // ignore leftover bytes
    };
    socket_.async_read_some(net::buffer(scratch), on_read);
    if (!finish(limit)) return net::error::timed_out;
    return result;
  }

 private:
  // Runs the pending operation; on timeout cancels it and returns false.
  bool finish(std::chrono::steady_clock::duration limit = client_limit) {
    io_.restart();
    io_.run_for(limit);
    if (io_.stopped()) return true;
    error_code ignored;
    socket_.cancel(ignored);
    io_.restart();
    io_.run();
    return false;
  }

  net::io_context io_;
  tcp::socket socket_{io_};
  beast::flat_buffer buffer_;
};

response text(unsigned status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

bool closed_by_server(const error_code& ec) {
  return ec == net::error::eof || ec == net::error::connection_reset ||
         ec == http::error::end_of_stream;
}

// Raises the soft descriptor limit towards the hard one so that `needed` descriptors fit;
// false when even the hard limit is too low.
bool ensure_descriptors(rlim_t needed) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur >= needed) return true;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < needed) return false;
  lim.rlim_cur = needed;
  return setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

class http_server_test : public ::testing::Test {
 protected:
  void start(http_server::options opts = {}, int threads = 2) {
    route_table routes;
    routes.add({"GET"}, "/metrics", [this](const request&, std::shared_ptr<reply> to) {
      ++scrapes_;
      if (throw_) throw std::runtime_error("scrape failed");
      to->send({200, "text/plain; version=0.0.4; charset=utf-8", metrics_text});
    });
    routes.add({"GET"}, "/healthz",
               [](const request&, std::shared_ptr<reply> to) { to->send(text(200, "ok\n")); });
    for (auto& [methods, path, h] : more_routes_)
      routes.add(methods, path, h);
    auto created = http_server::create(io_, "127.0.0.1:0", std::move(routes), opts);
    ASSERT_TRUE(created) << created.error().message;
    server_ = std::move(created).value();
    ASSERT_NE(server_->port(), 0);
    server_->start();
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this] { io_.run(); });
  }

  // Stops the server and returns how long the io_context took to run out of work.
  std::chrono::steady_clock::duration stop_and_join() {
    const auto t0 = std::chrono::steady_clock::now();
    if (server_) server_->stop();
    for (auto& t : threads_)
      t.join();
    threads_.clear();
    return std::chrono::steady_clock::now() - t0;
  }

  void TearDown() override {
    stop_and_join();
    server_.reset();
  }

  static constexpr const char* metrics_text =
      "# HELP denormd_build_info Always 1.\n# TYPE denormd_build_info gauge\n"
      "denormd_build_info{version=\"0.1.0\"} 1\n";

  net::io_context io_;
  std::unique_ptr<http_server> server_;
  std::vector<std::thread> threads_;
  std::atomic<int> scrapes_{0};
  std::atomic<bool> throw_{false};
  // Registered by start() after /metrics and /healthz.
  std::vector<std::tuple<std::vector<std::string>, std::string, handler>> more_routes_;
};

TEST_F(http_server_test, a_route_answers_with_its_status_content_type_and_body) {
  start();
  client c(server_->port());
  auto r = c.request(http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
  EXPECT_EQ(r.res[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.res.body(), metrics_text);
  EXPECT_EQ(scrapes_, 1);

  auto q = c.request(http::verb::get, "/metrics?name[]=x");  // query strings are ignored
  ASSERT_FALSE(q.ec) << q.ec.message();
  EXPECT_EQ(q.res.result(), http::status::ok);
}

TEST_F(http_server_test, head_has_the_headers_of_get_and_no_body) {
  start();
  client c(server_->port());
  auto r = c.request(http::verb::head, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
  EXPECT_EQ(r.res[http::field::content_length], std::to_string(std::string(metrics_text).size()));
  EXPECT_TRUE(r.res.body().empty());
  // The connection is still in step: the next response parses.
  auto h = c.request(http::verb::get, "/healthz");
  ASSERT_FALSE(h.ec) << h.ec.message();
  EXPECT_EQ(h.res.body(), "ok\n");
}

TEST_F(http_server_test, healthz_is_ok) {
  start();
  client c(server_->port());
  auto r = c.request(http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
  EXPECT_EQ(r.res.body(), "ok\n");
  EXPECT_EQ(r.res[http::field::content_type], "text/plain; charset=utf-8");
}

TEST_F(http_server_test, a_handler_sees_the_method_path_query_and_body) {
  more_routes_.push_back(
      {{"GET", "POST"}, "/echo", [](const request& req, std::shared_ptr<reply> to) {
         to->send({201, "text/x-echo",
                   std::string(req.method) + " " + std::string(req.path) + " [" +
                       std::string(req.query) + "] [" + std::string(req.body) + "]"});
       }});
  start();
  client c(server_->port());
  auto r = c.request(http::verb::get, "/echo?after=1%3A2&x=");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::created);
  EXPECT_EQ(r.res[http::field::content_type], "text/x-echo");
  EXPECT_EQ(r.res.body(), "GET /echo [after=1%3A2&x=] []");
  r = c.request(http::verb::post, "/echo");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.body(), "POST /echo [] []");
}

// Only the route table decides: a path nobody registered is 404 whatever the method (POST
// /-/reload without a reload route was 405 before the table), a registered path refuses the
// other methods with the ones it allows.
TEST_F(http_server_test, unknown_paths_are_404_and_other_methods_405_with_allow) {
  more_routes_.push_back({{"POST", "PUT"}, "/act", [](const request&, std::shared_ptr<reply> to) {
                            to->send(text(200, "done\n"));
                          }});
  start();
  client c(server_->port());
  auto r = c.request(http::verb::get, "/nope");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::not_found);
  EXPECT_EQ(r.res.body(), "not found\n");
  r = c.request(http::verb::post, "/nope");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::not_found);

  r = c.request(http::verb::post, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::method_not_allowed);
  EXPECT_EQ(r.res[http::field::allow], "GET, HEAD");
  r = c.request(http::verb::delete_, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::method_not_allowed);
  EXPECT_EQ(scrapes_, 0);

  r = c.request(http::verb::get, "/act");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::method_not_allowed);
  EXPECT_EQ(r.res[http::field::allow], "POST, PUT");
  r = c.request(http::verb::put, "/act");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.body(), "done\n");
}

TEST_F(http_server_test, an_answer_sent_later_from_another_thread_is_written_and_others_go_on) {
  std::promise<std::shared_ptr<reply>> asked;
  more_routes_.push_back({{"POST"}, "/later", [&](const request&, std::shared_ptr<reply> to) {
                            asked.set_value(std::move(to));  // answered from the test's thread
                          }});
  start();
  auto pending = std::async(std::launch::async, [&] {
    client c(server_->port());
    return c.request(http::verb::post, "/later");
  });
  auto answer = asked.get_future();
  ASSERT_EQ(answer.wait_for(client_limit), std::future_status::ready);
  // While that request waits, another connection is served.
  client other(server_->port());
  auto h = other.request(http::verb::get, "/healthz");
  ASSERT_FALSE(h.ec) << h.ec.message();
  EXPECT_EQ(h.res.result(), http::status::ok);
  EXPECT_EQ(pending.wait_for(100ms), std::future_status::timeout);  // still waiting
  std::thread([to = answer.get()] {
    to->send(text(500, "failed\n"));
    to->send(text(200, "twice\n"));  // only the first answer counts
  }).join();
  auto r = pending.get();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::internal_server_error);
  EXPECT_EQ(r.res.body(), "failed\n");
  EXPECT_EQ(r.res[http::field::content_type], "text/plain; charset=utf-8");
}

// A handler that waits on something without a callback asks again on the connection's strand
// (reply::after): no thread is held, and other connections are served meanwhile.
TEST_F(http_server_test, after_calls_back_on_the_connection_until_the_handler_answers) {
  std::atomic<int> level{0};
  std::atomic<int> looks{0};
  std::function<void(std::shared_ptr<reply>)> check = [&](std::shared_ptr<reply> to) {
    ++looks;
    if (level >= 1) return to->send(text(200, "level " + std::to_string(level.load()) + "\n"));
    to->after(20ms, [&check, to] { check(to); });
  };
  more_routes_.push_back(
      {{"GET"}, "/wait", [&](const request&, std::shared_ptr<reply> to) { check(std::move(to)); }});
  more_routes_.push_back({{"GET"}, "/wait-throws", [&](const request&, std::shared_ptr<reply> to) {
                            to->after(1ms, [] { throw std::runtime_error("lookup failed"); });
                          }});
  start(http_server::options{}, 1);  // one thread: the wait cannot be holding it
  auto pending = std::async(std::launch::async, [&] {
    client w(server_->port());
    return w.request(http::verb::get, "/wait");
  });
  EXPECT_EQ(pending.wait_for(150ms), std::future_status::timeout);
  client c(server_->port());
  auto h = c.request(http::verb::get, "/healthz");
  ASSERT_FALSE(h.ec) << h.ec.message();
  EXPECT_EQ(h.res.result(), http::status::ok);
  level = 1;
  auto r = pending.get();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.body(), "level 1\n");
  EXPECT_GE(looks, 3);

  auto t = c.request(http::verb::get, "/wait-throws");
  ASSERT_FALSE(t.ec) << t.ec.message();
  EXPECT_EQ(t.res.result(), http::status::internal_server_error);
  EXPECT_EQ(t.res.body(), "internal error: lookup failed\n");
}

TEST_F(http_server_test, a_reply_dropped_unanswered_closes_its_connection) {
  more_routes_.push_back({{"GET"}, "/drop", [](const request&, std::shared_ptr<reply>) {}});
  start();
  client c(server_->port());
  auto r = c.request(http::verb::get, "/drop");
  EXPECT_TRUE(closed_by_server(r.ec)) << r.ec.message();
}

TEST_F(http_server_test, stop_ends_a_waiting_request) {
  more_routes_.push_back({{"GET"}, "/forever", [](const request&, std::shared_ptr<reply> to) {
                            to->after(60s, [to] { to->send(text(200, "late\n")); });
                          }});
  start();
  client c(server_->port());
  ASSERT_FALSE(c.send_raw("GET /forever HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(100ms);
  EXPECT_LT(stop_and_join(), 2s);
  EXPECT_TRUE(closed_by_server(c.wait_closed()));
}

TEST_F(http_server_test, keep_alive_serves_several_requests_on_one_connection) {
  start();
  client c(server_->port());
  for (int i = 0; i < 3; ++i) {
    auto r = c.request(http::verb::get, i % 2 == 0 ? "/metrics" : "/healthz");
    ASSERT_FALSE(r.ec) << i << ": " << r.ec.message();
    EXPECT_EQ(r.res.result(), http::status::ok);
    EXPECT_TRUE(r.res.keep_alive());
  }
  EXPECT_EQ(scrapes_, 2);
}

TEST_F(http_server_test, connection_close_and_http_1_0_close_after_the_response) {
  start();
  {
    client c(server_->port());
    auto r = c.request(http::verb::get, "/healthz", /*keep_alive=*/false);
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_FALSE(r.res.keep_alive());
    EXPECT_TRUE(closed_by_server(c.wait_closed()));
  }
  {
    client c(server_->port());
    auto r = c.request(http::verb::get, "/healthz", /*keep_alive=*/false, /*version=*/10);
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.res.version(), 10);
    EXPECT_TRUE(closed_by_server(c.wait_closed()));
  }
}

TEST_F(http_server_test, an_oversized_header_gets_431_and_a_closed_connection) {
  start();
  client big(server_->port());
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + std::string(16 * 1024, 'a') +
      "\r\n\r\n";
  ASSERT_FALSE(big.send_raw(request));
  auto r = big.read_reply();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::request_header_fields_too_large);
  EXPECT_FALSE(r.res.keep_alive());
  EXPECT_TRUE(closed_by_server(big.wait_closed()));
  EXPECT_EQ(scrapes_, 0);

  // Others are still served.
  client other(server_->port());
  auto ok = other.request(http::verb::get, "/metrics");
  ASSERT_FALSE(ok.ec) << ok.ec.message();
  EXPECT_EQ(ok.res.result(), http::status::ok);
}

TEST_F(http_server_test, a_malformed_request_gets_400) {
  start();
  client c(server_->port());
  ASSERT_FALSE(c.send_raw("GET /metrics HTTP/9.9 junk\r\n\r\n"));
  auto r = c.read_reply();
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::bad_request);
  EXPECT_TRUE(closed_by_server(c.wait_closed()));
}

TEST_F(http_server_test, an_idle_or_slow_connection_is_closed_after_the_read_timeout) {
  http_server::options opts;
  opts.read_timeout = 200ms;
  start(opts);
  client idle(server_->port());
  client slow(server_->port());
  ASSERT_FALSE(slow.send_raw("GET /metrics HTTP/1.1\r\nHost: local"));  // never finished
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_server(idle.wait_closed(3s)));
  EXPECT_TRUE(closed_by_server(slow.wait_closed(3s)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);

  // The timeout also ends a keep-alive connection that stays quiet after a response.
  client quiet(server_->port());
  auto r = quiet.request(http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_TRUE(closed_by_server(quiet.wait_closed(3s)));
}

TEST_F(http_server_test, concurrent_clients_are_all_served) {
  start({}, 2);
  constexpr int clients = 8;
  constexpr int requests = 25;
  std::atomic<int> ok{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < clients; ++i) {
    pool.emplace_back([&, port = server_->port()] {
      client c(port);
      for (int k = 0; k < requests; ++k) {
        auto r = c.request(http::verb::get, "/metrics");
        if (!r.ec && r.res.result() == http::status::ok && r.res.body() == metrics_text) ++ok;
      }
    });
  }
  for (auto& t : pool)
    t.join();
  EXPECT_EQ(ok, clients * requests);
  EXPECT_EQ(scrapes_, clients * requests);
}

TEST_F(http_server_test, over_the_limit_the_longest_waiting_connection_makes_room) {
  http_server::options opts;
  opts.max_connections = 2;
  start(opts);
  client first(server_->port());
  client second(server_->port());
  // A session starts waiting for its next request just after its response is on the way, so
  // the client can have the response first: a pause after each answer makes the order of the
  // waits the order of the requests.
  ASSERT_FALSE(first.request(http::verb::get, "/healthz").ec);  // both are accepted by now
  std::this_thread::sleep_for(200ms);
  ASSERT_FALSE(second.request(http::verb::get, "/healthz").ec);
  std::this_thread::sleep_for(200ms);
  client third(server_->port());  // `first` has waited longest for its next request
  auto r = third.request(http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
  EXPECT_TRUE(closed_by_server(first.wait_closed(2s)));
  r = second.request(http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
}

TEST_F(http_server_test, a_connection_busy_answering_is_not_closed_for_a_new_one) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  std::atomic<bool> block{true};
  http_server::options opts;
  opts.max_connections = 1;
  route_table routes;
  routes.add({"GET"}, "/metrics", [&](const request&, std::shared_ptr<reply> to) {
    if (block.exchange(false)) {
      entered.set_value();
      released.wait();
    }
    to->send(text(200, "x 1\n"));
  });
  auto created = http_server::create(io_, "127.0.0.1:0", std::move(routes), opts);
  ASSERT_TRUE(created) << created.error().message;
  server_ = std::move(created).value();
  server_->start();
  for (int i = 0; i < 2; ++i)
    threads_.emplace_back([this] { io_.run(); });

  client busy(server_->port());
  std::thread scrape([&] {
    auto r = busy.request(http::verb::get, "/metrics");
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.res.result(), http::status::ok);
  });
  ASSERT_EQ(entered.get_future().wait_for(client_limit), std::future_status::ready);
  client refused(server_->port());
  EXPECT_TRUE(closed_by_server(refused.wait_closed(2s)));
  release.set_value();
  scrape.join();
}

// Issue 11: 64 idle connections used to leave /healthz unanswered, a restart loop under a
// liveness probe. Far more than the limit are held open here.
TEST_F(http_server_test, five_hundred_idle_connections_do_not_starve_healthz) {
  constexpr int idle_count = 500;
  if (!ensure_descriptors(2 * idle_count + 100))
    GTEST_SKIP() << "needs about " << 2 * idle_count + 100 << " file descriptors (ulimit -n)";
  start();
  net::io_context idle_io;
  std::vector<tcp::socket> idle;
  idle.reserve(idle_count);
  for (int i = 0; i < idle_count; ++i) {
    idle.emplace_back(idle_io);
    idle.back().connect(tcp::endpoint(net::ip::address_v4::loopback(), server_->port()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  client probe(server_->port());
  auto r = probe.request(http::verb::get, "/healthz");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
  // The bound the issue asks for; the answer takes milliseconds, so this leaves room for a
  // loaded machine. Without the fix there is no answer at all (the probe is closed).
  EXPECT_LT(took, 1s);
}

// A slowloris client sends a header byte now and then to keep its connection; the header
// deadline (2 s by default) closes it long before the 10 s whole-request timeout.
TEST_F(http_server_test, a_slowloris_client_is_closed_after_the_header_deadline) {
  start();
  client slow(server_->port());
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
  std::size_t sent = 0;
  bool closed = false;
  // One byte a second, for at most 6 s (the whole-request timeout would allow 10).
  while (!closed && sent < 6) {
    slow.send_raw(request.substr(sent++, 1));
    closed = closed_by_server(slow.wait_closed(1s));
  }
  EXPECT_TRUE(closed) << "still open after " << sent << " bytes, one a second";
  EXPECT_LE(sent, 4u);
}

TEST_F(http_server_test, a_throwing_handler_gives_500_and_the_server_goes_on) {
  start();
  throw_ = true;
  client c(server_->port());
  auto r = c.request(http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::internal_server_error);
  throw_ = false;
  r = c.request(http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);
}

TEST_F(http_server_test, stop_returns_promptly_and_closes_open_connections) {
  http_server::options opts;
  opts.header_timeout = 10s;
  start(opts);
  client idle(server_->port());
  client partial(server_->port());
  client served(server_->port());
  ASSERT_FALSE(partial.send_raw("GET /metrics HTTP/1.1\r\n"));
  auto r = served.request(http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();

  // Every connection has a 10 s header timeout pending; the io_context running out of work
  // well before that shows stop() closed them all (and the listener).
  const auto took = stop_and_join();
  EXPECT_LT(took, 2s);
  EXPECT_TRUE(closed_by_server(idle.wait_closed(2s)));
  EXPECT_TRUE(closed_by_server(partial.wait_closed(2s)));
  EXPECT_TRUE(closed_by_server(served.wait_closed(2s)));

  server_->stop();   // idempotent
  server_->start();  // no effect after stop
}

TEST_F(http_server_test, destroying_a_running_server_stops_it) {
  start();
  client c(server_->port());
  server_.reset();
  for (auto& t : threads_)
    t.join();
  threads_.clear();
  EXPECT_TRUE(closed_by_server(c.wait_closed(2s)));
}

TEST(http_server_address_test, parses_host_and_port) {
  auto a = parse_listen_address("0.0.0.0:9464");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 9464);
  a = parse_listen_address("127.0.0.1:0");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->port, 0);
  a = parse_listen_address("[::1]:65535");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 65535);
  a = parse_listen_address("localhost:8080");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->host, "localhost");
}

TEST(http_server_address_test, rejects_bad_addresses_with_a_clear_message) {
  for (const char* bad :
       {"", "9464", ":9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
        "127.0.0.1:-1", "127.0.0.1:123456", "::1:9464", "[::1]9464", "[::1", "[]:9464",
        "example.com:9464", "1.2.3:80", "127.0.0.1:80 "}) {
    auto a = parse_listen_address(bad);
    EXPECT_FALSE(a) << '"' << bad << "\" parsed";
    if (!a) {
      EXPECT_NE(a.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
          << a.error().message;
    }
    net::io_context io;
    auto s = http_server::create(io, bad, route_table{});
    EXPECT_FALSE(s) << '"' << bad << "\" created a server";
  }
}

TEST(http_server_address_test, a_port_in_use_is_an_error_value) {
  net::io_context io;
  auto first = http_server::create(io, "127.0.0.1:0", route_table{});
  ASSERT_TRUE(first) << first.error().message;
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = http_server::create(io, taken, route_table{});
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("cannot listen on " + taken), std::string::npos)
      << second.error().message;
}

}  // namespace
}  // namespace denormd::http
