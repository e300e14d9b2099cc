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
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
// GCC 12 with the sanitizers reports a false maybe-uninitialized inside Beast's response
// parser (a boost::optional it reads only once set); the server uses only the request parser.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

#include "http/http_get.h"
#include "http/web_security.h"
#include "test_certificates.h"

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

  reply request(http::verb verb, std::string target, bool keep_alive = true, unsigned version = 11,
                const std::string& authorization = "") {
    http::request<http::string_body> req{verb, target, static_cast<int>(version)};
    req.set(http::field::host, "localhost");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
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

// ---- with a web config file: TLS, basic auth, headers --------------------------------------

// A TLS client on an io_context of its own; like `client`, every call is bounded in time.
class tls_client {
 public:
  // `ca_file`: verify the server against it ("": no verification); `cert`: present it.
  explicit tls_client(std::uint16_t port, const std::string& ca_file = "",
                      const testing::identity* cert = nullptr) {
    if (ca_file.empty()) {
      ctx_.set_verify_mode(net::ssl::verify_none);
    } else {
      ctx_.load_verify_file(ca_file);
      ctx_.set_verify_mode(net::ssl::verify_peer);
    }
    if (cert != nullptr) {
      SSL_CTX_use_certificate(ctx_.native_handle(), cert->cert.get());
      SSL_CTX_use_PrivateKey(ctx_.native_handle(), cert->key.get());
    }
    // After the context is complete: a stream copies what it holds when it is made.
    stream_.emplace(io_, ctx_);
    beast::get_lowest_layer(*stream_).connect(tcp::endpoint(net::ip::address_v4::loopback(), port));
  }

  error_code handshake() {
    error_code result = net::error::timed_out;
    stream_->async_handshake(net::ssl::stream_base::client, [&](error_code ec) { result = ec; });
    run();
    return result;
  }

  client::reply request(http::verb verb, const std::string& target,
                        const std::string& authorization = "") {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "localhost");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    req.prepare_payload();
    client::reply r;
    r.ec = net::error::timed_out;
    http::async_write(*stream_, req, [&](error_code ec, std::size_t) { r.ec = ec; });
    run();
    if (r.ec) return r;
    r.ec = net::error::timed_out;
    http::response_parser<http::string_body> parser;
    http::async_read(*stream_, buffer_, parser, [&](error_code ec, std::size_t) { r.ec = ec; });
    run();
    if (!r.ec) r.res = parser.release();
    return r;
  }

 private:
  void run() {
    io_.restart();
    io_.run_for(client_limit);
    if (io_.stopped()) return;
    beast::get_lowest_layer(*stream_).close();
    io_.restart();
    io_.run();
  }

  net::io_context io_;
  net::ssl::context ctx_{net::ssl::context::tls_client};
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

// "Basic base64(user:password)".
std::string basic(const std::string& user, const std::string& password) {
  static constexpr char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string in = user + ":" + password;
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += digits[(n >> 18) & 63];
    out += digits[(n >> 12) & 63];
    out += i + 1 < in.size() ? digits[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? digits[n & 63] : '=';
  }
  return "Basic " + out;
}

class http_server_web_config_test : public http_server_test {
 protected:
  void SetUp() override {
    ca_ = testing::make_identity("test CA", nullptr, true);
    const auto server = testing::make_identity("localhost", &ca_, false, "IP:127.0.0.1");
    testing::write_pem(ca_, dir_.file("ca.pem"), dir_.file("ca-key.pem"));
    testing::write_pem(server, dir_.file("cert.pem"), dir_.file("key.pem"));
  }

  // Starts the server with this web config file.
  void start_with(const std::string& web_yml, int threads = 2) {
    auto security = web_security::open(dir_.write("web.yml", web_yml));
    ASSERT_TRUE(security) << security.error().message;
    http_server::options opts;
    opts.security = std::move(security).value();
    start(opts, threads);
  }

  std::string users() {
    return "basic_auth_users:\n  alice: " + testing::bcrypt_hash("a-pw") + "\n";
  }

  static constexpr const char* tls_section =
      "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n";

  testing::scratch_dir dir_;
  testing::identity ca_;
};

TEST_F(http_server_web_config_test, with_tls_plain_http_is_told_to_use_https) {
  start_with(tls_section);
  client c(server_->port());
  auto r = c.request(http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::bad_request);
  EXPECT_EQ(r.res.body(), "Client sent an HTTP request to an HTTPS server.\n");
  EXPECT_TRUE(closed_by_server(c.wait_closed()));
  EXPECT_EQ(scrapes_, 0);
}

TEST_F(http_server_web_config_test, with_tls_requests_are_served_over_https) {
  start_with(tls_section);
  tls_client c(server_->port(), dir_.file("ca.pem"));  // the server's chain verifies
  ASSERT_FALSE(c.handshake());
  for (int i = 0; i < 2; ++i) {  // keep-alive
    auto r = c.request(http::verb::get, "/metrics");
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.res.result(), http::status::ok);
    EXPECT_EQ(r.res.body(), metrics_text);
  }
  EXPECT_EQ(scrapes_, 2);
}

TEST_F(http_server_web_config_test, with_users_every_path_needs_the_right_password) {
  start_with(users());
  client c(server_->port());
  const auto get = [&](const std::string& target, const std::string& auth) {
    auto r = c.request(http::verb::get, target, true, 11, auth);
    EXPECT_FALSE(r.ec) << r.ec.message();
    return r.res;
  };
  for (const char* path : {"/metrics", "/healthz", "/no-such-path"}) {
    for (const std::string& auth : {std::string(), basic("alice", "wrong"), basic("bob", "a-pw"),
                                    std::string("Basic !!"), std::string("Bearer x")}) {
      const auto res = get(path, auth);
      EXPECT_EQ(res.result(), http::status::unauthorized) << path << " " << auth;
      EXPECT_EQ(res[http::field::www_authenticate], "Basic realm=\"denormd\"");
    }
  }
  EXPECT_EQ(scrapes_, 0);
  EXPECT_EQ(get("/metrics", basic("alice", "a-pw")).result(), http::status::ok);
  EXPECT_EQ(get("/metrics", basic("alice", "a-pw")).result(), http::status::ok);  // remembered
  EXPECT_EQ(get("/no-such-path", basic("alice", "a-pw")).result(), http::status::not_found);
  EXPECT_EQ(scrapes_, 2);
}

TEST_F(http_server_web_config_test, tls_and_users_together_and_the_configured_headers) {
  start_with(std::string(tls_section) + users() +
             "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
             "    X-Content-Type-Options: nosniff\n");
  tls_client c(server_->port());
  ASSERT_FALSE(c.handshake());
  auto denied = c.request(http::verb::get, "/healthz");
  ASSERT_FALSE(denied.ec) << denied.ec.message();
  EXPECT_EQ(denied.res.result(), http::status::unauthorized);
  EXPECT_EQ(denied.res[http::field::x_frame_options], "deny");
  auto ok = c.request(http::verb::get, "/healthz", basic("alice", "a-pw"));
  ASSERT_FALSE(ok.ec) << ok.ec.message();
  EXPECT_EQ(ok.res.result(), http::status::ok);
  EXPECT_EQ(ok.res.body(), "ok\n");
  EXPECT_EQ(ok.res["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(ok.res[http::field::x_frame_options], "deny");
}

TEST_F(http_server_web_config_test, a_client_certificate_is_required_and_verified) {
  start_with(std::string(tls_section) +
             "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n");
  const auto good = testing::make_identity("scraper", &ca_, false);
  tls_client with(server_->port(), "", &good);
  const auto with_hs = with.handshake();
  ASSERT_FALSE(with_hs) << with_hs.message();
  auto r = with.request(http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.res.result(), http::status::ok);

  // Without one, or with one of another CA: no answer (with TLS 1.3 the client learns it at
  // its first read).
  const auto stranger_ca = testing::make_identity("other CA", nullptr, true);
  const auto stranger = testing::make_identity("scraper", &stranger_ca, false);
  for (const testing::identity* cert :
       {static_cast<const testing::identity*>(nullptr), &stranger}) {
    tls_client c(server_->port(), "", cert);
    const auto hs = c.handshake();
    if (!hs) {
      EXPECT_TRUE(c.request(http::verb::get, "/metrics").ec);
    }
  }
  EXPECT_EQ(scrapes_, 1);
}

TEST_F(http_server_web_config_test, a_slow_bcrypt_check_does_not_hold_up_the_other_connections) {
  // bob's hash is costly (cost 14: a second or more); alice's is cheap and remembered.
  start_with("basic_auth_users:\n  alice: " + testing::bcrypt_hash("a-pw") +
                 "\n  bob: " + testing::bcrypt_hash("b-pw", 14) + "\n",
             1);  // one io thread, as the daemon's endpoint runs
  client fast(server_->port());
  ASSERT_EQ(
      fast.request(http::verb::get, "/healthz", true, 11, basic("alice", "a-pw")).res.result(),
      http::status::ok);
  client slow(server_->port());
  std::atomic<bool> slow_answered{false};
  std::thread t([&] {
    auto r = slow.request(http::verb::get, "/healthz", true, 11, basic("bob", "wrong"));
    EXPECT_EQ(r.res.result(), http::status::unauthorized);
    slow_answered = true;
  });
  std::this_thread::sleep_for(50ms);  // bob's check is under way
  auto r = fast.request(http::verb::get, "/metrics", true, 11, basic("alice", "a-pw"));
  EXPECT_FALSE(slow_answered) << "the cached request waited for bob's bcrypt";
  EXPECT_EQ(r.res.result(), http::status::ok);
  t.join();
  EXPECT_TRUE(slow_answered);
}

// denormd's own client of such a port (http/http_get.h, `denormd cost --metrics-url`): the
// credentials in the URL, a private CA through OpenSSL's SSL_CERT_FILE.
TEST_F(http_server_web_config_test, denormds_http_client_reaches_a_tls_and_auth_port) {
  start_with(std::string(tls_section) + users());
  const std::string at = "127.0.0.1:" + std::to_string(server_->port()) + "/metrics";
  ::setenv("SSL_CERT_FILE", dir_.file("ca.pem").c_str(), 1);
  const auto ok = http_get("https://alice:a-pw@" + at, 5s);
  const auto anonymous = http_get("https://" + at, 5s);
  const auto wrong = http_get("https://alice:wrong@" + at, 5s);
  const auto plain = http_get("http://alice:a-pw@" + at, 5s);
  ::unsetenv("SSL_CERT_FILE");
  const auto untrusted = http_get("https://alice:a-pw@" + at, 5s);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, metrics_text);
  ASSERT_FALSE(anonymous);
  EXPECT_NE(anonymous.error().message.find("answered 401"), std::string::npos);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("answered 401"), std::string::npos);
  EXPECT_EQ(wrong.error().message.find("wrong"), std::string::npos);  // never the password
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("answered 400"), std::string::npos) << plain.error().message;
  ASSERT_FALSE(untrusted);  // the system's CAs do not know the test CA
  EXPECT_EQ(scrapes_, 1);
}

}  // namespace
}  // namespace denormd::http
