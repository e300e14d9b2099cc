// The daemon's routes, called as the server calls them, with a reply that records the answer
// and runs reply::after's callbacks when the test says.
#include "app/http_routes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace denormd::app {
namespace {

using namespace std::chrono_literals;

class recorded_reply final : public http::reply {
 public:
  void send(http::response r) override {
    if (!answer) answer = std::move(r);
  }
  void after(std::chrono::milliseconds delay, std::function<void()> then) override {
    waits.push_back(delay);
    pending = std::move(then);
  }
  // Runs what after() asked for, as the connection would once the delay is over.
  void run_pending() {
    auto then = std::move(pending);
    pending = nullptr;
    then();
  }

  std::optional<http::response> answer;
  std::vector<std::chrono::milliseconds> waits;
  std::function<void()> pending;
};

// Calls the route for `method` and `target` as the server would; asserts it is served.
std::shared_ptr<recorded_reply> call(const http::route_table& routes, std::string_view method,
                                     std::string_view target) {
  const auto question = target.find('?');
  const http::request req{
      method,
      target.substr(0, question),
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1),
      {}};
  auto to = std::make_shared<recorded_reply>();
  const auto found = routes.find(req.method, req.path);
  EXPECT_NE(found.serve, nullptr) << method << " " << target;
  if (found.serve != nullptr) (*found.serve)(req, to);
  return to;
}

route_sources basic(std::atomic<bool>& ready) {
  route_sources s;
  s.metrics = [] { return std::string("denormd_up 1\n"); };
  s.ready = [&ready] {
    if (ready) return readiness{true, ""};
    return readiness{false, "shop.customers: resyncing\nshop.products: retrying"};
  };
  return s;
}

TEST(http_routes_test, metrics_healthz_and_readyz) {
  std::atomic<bool> ready{true};
  const auto routes = daemon_routes(basic(ready));
  auto m = call(routes, "GET", "/metrics");
  ASSERT_TRUE(m->answer);
  EXPECT_EQ(m->answer->status, 200u);
  EXPECT_EQ(m->answer->content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(m->answer->body, "denormd_up 1\n");
  auto h = call(routes, "GET", "/healthz");
  ASSERT_TRUE(h->answer);
  EXPECT_EQ(h->answer->body, "ok\n");
  EXPECT_EQ(h->answer->content_type, "text/plain; charset=utf-8");

  auto r = call(routes, "GET", "/readyz");
  ASSERT_TRUE(r->answer);
  EXPECT_EQ(r->answer->status, 200u);
  EXPECT_EQ(r->answer->body, "ready\n");
  ready = false;
  r = call(routes, "GET", "/readyz");
  ASSERT_TRUE(r->answer);
  EXPECT_EQ(r->answer->status, 503u);
  EXPECT_EQ(r->answer->body, "not ready\nshop.customers: resyncing\nshop.products: retrying\n");
}

TEST(http_routes_test, without_reload_or_applied_those_paths_are_refused_or_not_served) {
  std::atomic<bool> ready{true};
  const auto routes = daemon_routes(basic(ready));
  // As Prometheus without --web.enable-lifecycle: 403 with the reason, reloading nothing.
  auto r = call(routes, "POST", "/-/reload");
  ASSERT_TRUE(r->answer);
  EXPECT_EQ(r->answer->status, 403u);
  EXPECT_EQ(r->answer->body,
            "Lifecycle API is not enabled (start denormd with --web-enable-lifecycle)\n");
  EXPECT_EQ(routes.find("GET", "/applied").allow, "");
  EXPECT_EQ(routes.find("POST", "/metrics").allow, "GET, HEAD");
}

TEST(http_routes_test, reload_answers_with_the_outcome_when_it_has_run) {
  std::atomic<bool> ready{true};
  auto sources = basic(ready);
  std::vector<reload_requests::answer> asked;
  sources.reload = [&](reload_requests::answer done) { asked.push_back(std::move(done)); };
  const auto routes = daemon_routes(std::move(sources));
  auto ok = call(routes, "POST", "/-/reload");
  auto failed = call(routes, "PUT", "/-/reload");  // PUT works as POST does (as Prometheus)
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_FALSE(ok->answer);  // not before the reload has run
  asked[0]({true, ""});
  asked[1]({false, "orders-customer.json: /fields: must be an object"});
  ASSERT_TRUE(ok->answer);
  EXPECT_EQ(ok->answer->status, 200u);
  EXPECT_EQ(ok->answer->body, "reloaded\n");
  ASSERT_TRUE(failed->answer);
  EXPECT_EQ(failed->answer->status, 500u);
  EXPECT_EQ(failed->answer->body,
            "reload failed; the mappings running before still run\n"
            "orders-customer.json: /fields: must be an object\n");
  EXPECT_EQ(routes.find("GET", "/-/reload").allow, "POST, PUT");
}

TEST(http_routes_test, applied_answers_once_the_copies_have_caught_up_or_408_in_time) {
  std::atomic<bool> ready{true};
  auto sources = basic(ready);
  std::atomic<std::uint32_t> through{100};
  sources.applied = [&](std::string_view name) -> std::optional<bson::timestamp> {
    if (name == "nope") return std::nullopt;
    if (name == "broken") throw std::runtime_error("no supervisor");
    return bson::timestamp{through.load(), 1};
  };
  const auto routes = daemon_routes(std::move(sources));
  auto r = call(routes, "GET", "/applied?after=100:1");
  ASSERT_TRUE(r->answer);
  EXPECT_EQ(r->answer->status, 200u);
  EXPECT_EQ(r->answer->body, "applied through 100:1\n");

  // Not yet: it looks again every 20 ms until the copies catch up.
  auto later = call(routes, "GET", "/applied?after=101&mapping=orders-customer&timeout=5");
  EXPECT_FALSE(later->answer);
  ASSERT_EQ(later->waits, (std::vector<std::chrono::milliseconds>{20ms}));
  later->run_pending();
  EXPECT_FALSE(later->answer);
  through = 101;
  later->run_pending();
  ASSERT_TRUE(later->answer);
  EXPECT_EQ(later->answer->status, 200u);
  EXPECT_EQ(later->answer->body, "applied through 101:1\n");

  auto slow = call(routes, "GET", "/applied?after=200&timeout=0");
  ASSERT_TRUE(slow->answer);
  EXPECT_EQ(slow->answer->status, 408u);
  EXPECT_EQ(slow->answer->body, "not applied through 200:0 in time; applied through 101:1\n");
  auto unknown = call(routes, "GET", "/applied?after=1&mapping=nope");
  ASSERT_TRUE(unknown->answer);
  EXPECT_EQ(unknown->answer->status, 404u);
  EXPECT_EQ(unknown->answer->body, "no running mapping named \"nope\"\n");
  auto bad = call(routes, "GET", "/applied?after=soon");
  ASSERT_TRUE(bad->answer);
  EXPECT_EQ(bad->answer->status, 400u);
  // What the server answers 500 for: the exception leaves the handler.
  EXPECT_THROW(call(routes, "GET", "/applied?after=1&mapping=broken"), std::runtime_error);
}

TEST(http_routes_test, the_page_and_its_api_are_served_only_with_a_status_source) {
  std::atomic<bool> ready{true};
  const auto without = daemon_routes(basic(ready));
  EXPECT_EQ(without.find("GET", "/").serve, nullptr);
  EXPECT_EQ(without.find("GET", "/api/v1/status").serve, nullptr);
  auto sources = basic(ready);
  int asked = 0;
  sources.status = [&](std::shared_ptr<http::reply> to) {
    ++asked;
    to->send({200, "application/json", "{}"});
  };
  const auto routes = daemon_routes(std::move(sources));
  auto page = call(routes, "GET", "/");
  ASSERT_TRUE(page->answer);
  EXPECT_EQ(page->answer->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->answer->body.find("/api/v1/status"), std::string::npos);
  EXPECT_NE(page->answer->body.find("api/v1/status"), std::string::npos);
  // Nothing fetched from elsewhere: no absolute URL in a src or href.
  EXPECT_EQ(page->answer->body.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page->answer->body.find("href=\"http"), std::string::npos);
  auto api = call(routes, "GET", "/api/v1/status");
  ASSERT_TRUE(api->answer);
  EXPECT_EQ(api->answer->body, "{}");
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace denormd::app
