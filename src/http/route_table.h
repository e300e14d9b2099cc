#pragma once
// What an http_server serves: routes (methods + path -> handler) that its owner registers, so
// the server knows HTTP and nothing of what the routes mean (app registers the daemon's:
// docs/architecture.md, "Layers").
//
// A handler answers through the `reply` it is given, at once or later: a reply may be kept
// and answered from any thread (a reload answers when it has run), or wait on the connection
// without holding a thread (reply::after). Until it is answered, that connection reads
// nothing more and the others are served as usual.
//
// Matching: the path (the target without its query) must equal a route's path. A route that
// serves GET also serves HEAD (the answer without its body). No route for the path: 404; a
// route for the path but not the method: 405 with an Allow header listing its methods.
//
// Lifecycle: filled before the server is created, read-only after. Thread-safety: find() from
// any thread once filled; handlers are called on the io_context's threads, concurrently.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace denormd::http {

// One request, as a handler sees it; the views are valid during the handler's call only.
struct request {
  std::string_view method;  // "GET", "HEAD", "POST", ...
  std::string_view path;    // the target up to '?'
  std::string_view query;   // after '?', still %-encoded; "" without one
  std::string_view body;
};

struct response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// The answer to one request. Thread-safety: send() and after() from any thread.
class reply {
 public:
  virtual ~reply() = default;
  // Answers the request; the first call counts, later ones are ignored.
  virtual void send(response r) = 0;
  // Calls `then` after `delay` on the connection's strand, unless the connection is closed
  // first (the server stopping closes it): for an answer that waits on something with no
  // callback of its own. One wait at a time per request.
  virtual void after(std::chrono::milliseconds delay, std::function<void()> then) = 0;
};

// Called on one of the io_context's threads; must not block it for long. An exception it
// throws before answering is answered with 500 "internal error: <what>". A request whose
// reply is dropped unanswered closes its connection.
using handler = std::function<void(const request& req, std::shared_ptr<reply> answer)>;

class route_table {
 public:
  // Serves `path` for `methods` (upper case, as "GET"; GET brings HEAD) with `h`. A path is
  // registered once.
  void add(std::vector<std::string> methods, std::string path, handler h);

  // What a request for `method` and `path` gets: the handler, or none and the methods the
  // path allows (none: 404; some: 405).
  struct match {
    const handler* serve = nullptr;
    std::string allow;  // "GET, HEAD"
  };
  match find(std::string_view method, std::string_view path) const;

 private:
  struct route {
    std::vector<std::string> methods;
    std::string path;
    handler serve;
  };
  std::vector<route> routes_;  // a handful: a linear search is the fastest
};

// `in` with %XX and '+' decoded, as in a query string; nullopt for a malformed escape.
std::optional<std::string> url_decoded(std::string_view in);

}  // namespace denormd::http
