#include "app/http_routes.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "app/applied_query.h"
#include "app/operator_page.h"

namespace denormd::app {

namespace {

constexpr const char* metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr auto applied_poll = std::chrono::milliseconds(20);

using applied_fn = decltype(route_sources::applied);
using clock = std::chrono::steady_clock;

// A text answer of lines, the last one ended too.
http::response lines(unsigned status, std::string body) {
  if (body.empty() || body.back() != '\n') body += '\n';
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

std::string to_text(bson::timestamp at) {
  return std::to_string(at.t) + ":" + std::to_string(at.i);
}

// Answers when it can; else asks again after applied_poll, on the connection, until `deadline`.
void check_applied(std::shared_ptr<const applied_fn> applied, applied_query q,
                   clock::time_point deadline, std::shared_ptr<http::reply> to) {
  const auto at = (*applied)(q.mapping);
  if (!at) return to->send(lines(404, "no running mapping named \"" + q.mapping + "\""));
  if (*at >= q.after) return to->send(lines(200, "applied through " + to_text(*at)));
  const auto now = clock::now();
  if (now >= deadline) {
    return to->send(lines(408, "not applied through " + to_text(q.after) +
                                   " in time; applied through " + to_text(*at)));
  }
  const auto wait = std::min<clock::duration>(applied_poll, deadline - now);
  auto again = [applied, q, deadline, to]() mutable {
    check_applied(std::move(applied), std::move(q), deadline, std::move(to));
  };
  to->after(std::chrono::ceil<std::chrono::milliseconds>(wait), std::move(again));
}

void add_applied(http::route_table& routes, applied_fn applied) {
  auto shared = std::make_shared<const applied_fn>(std::move(applied));
  routes.add({"GET"}, "/applied",
             [shared](const http::request& req, std::shared_ptr<http::reply> to) {
               auto q = parse_applied_query(req.query);
               if (!q) return to->send(lines(400, q.error().message));
               const auto deadline = clock::now() + q->timeout;
               check_applied(shared, std::move(q).value(), deadline, std::move(to));
             });
}

void add_reload(http::route_table& routes, decltype(route_sources::reload) reload) {
  // POST as Prometheus does; PUT as well.
  routes.add({"POST", "PUT"}, "/-/reload",
             [reload = std::move(reload)](const http::request&, std::shared_ptr<http::reply> to) {
               reload([to](const reload_outcome& r) {
                 if (r.ok) return to->send(lines(200, "reloaded"));
                 to->send(lines(
                     500, "reload failed; the mappings running before still run\n" + r.message));
               });
             });
}

}  // namespace

http::route_table daemon_routes(route_sources sources) {
  http::route_table routes;
  routes.add({"GET"}, "/metrics",
             [metrics = std::move(sources.metrics)](const http::request&,
                                                    std::shared_ptr<http::reply> to) {
               to->send({200, metrics_content_type, metrics()});
             });
  routes.add({"GET"}, "/healthz", [](const http::request&, std::shared_ptr<http::reply> to) {
    to->send(lines(200, "ok"));
  });
  routes.add(
      {"GET"}, "/readyz",
      [ready = std::move(sources.ready)](const http::request&, std::shared_ptr<http::reply> to) {
        const readiness r = ready();
        if (r.ready) return to->send(lines(200, "ready"));
        to->send(lines(503, "not ready\n" + r.detail));
      });
  if (sources.reload) {
    add_reload(routes, std::move(sources.reload));
  } else {
    // As Prometheus answers without --web.enable-lifecycle: refused, with the reason.
    routes.add(
        {"POST", "PUT"}, "/-/reload", [](const http::request&, std::shared_ptr<http::reply> to) {
          to->send(lines(
              403, "Lifecycle API is not enabled (start denormd with --web-enable-lifecycle)"));
        });
  }
  if (sources.applied) add_applied(routes, std::move(sources.applied));
  if (sources.status) {
    routes.add(
        {"GET"}, "/api/v1/status",
        [status = std::move(sources.status)](
            const http::request&, std::shared_ptr<http::reply> to) { status(std::move(to)); });
    routes.add({"GET"}, "/", [](const http::request&, std::shared_ptr<http::reply> to) {
      to->send({200, "text/html; charset=utf-8", std::string(operator_page_html)});
    });
  }
  return routes;
}

}  // namespace denormd::app
