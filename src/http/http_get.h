#pragma once
// One HTTP GET, blocking, for a command that reads another process's page (`denormd cost`
// reads a running denormd's /metrics): http:// or https:// (the certificate checked against
// the system's trusted ones and the host name), basic auth from the URL's user:password@.
// Errors never quote the credentials. Stateless; thread-safe.

#include <chrono>
#include <string>

#include "common/expected.h"

namespace denormd::http {

// The body of a 200 answer, or why there is none (an unparsable URL, a connection refused,
// a certificate not trusted, a status other than 200: named with the URL, credentials left
// out). Bounded by `timeout` as a whole and by 64 MiB of body.
expected<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout);

// The URL with its user:password@ left out, for messages.
std::string url_without_credentials(const std::string& url);

}  // namespace denormd::http
