#include "http/endpoint.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace denormd::http {
namespace {

// Connects to 127.0.0.1:`port`; -1 when nothing listens there.
int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval limit{5, 0};  // every read is bounded: a server that never answers fails the test
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One HTTP/1.0 GET; the whole response (the server closes after it), or "" on failure.
std::string get(std::uint16_t port, const std::string& path) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  std::string out;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST(endpoint_test, serves_on_its_own_thread_until_stopped) {
  std::atomic<bool> ready{false};
  route_table routes;
  routes.add({"GET"}, "/metrics", [](const request&, std::shared_ptr<reply> to) {
    to->send({200, "text/plain", "denormd_up 1\n"});
  });
  routes.add({"GET"}, "/readyz", [&](const request&, std::shared_ptr<reply> to) {
    if (ready) return to->send({200, "text/plain", "ready\n"});
    to->send({503, "text/plain", "not ready\nshop.customers: starting\n"});
  });
  auto e = endpoint::start("127.0.0.1:0", std::move(routes));
  ASSERT_TRUE(e) << e.error().message;
  const std::uint16_t port = (*e)->port();
  ASSERT_NE(port, 0);

  EXPECT_NE(get(port, "/metrics").find("denormd_up 1"), std::string::npos);
  const std::string not_ready = get(port, "/readyz");
  EXPECT_NE(not_ready.find(" 503 "), std::string::npos) << not_ready;
  EXPECT_NE(not_ready.find("shop.customers: starting"), std::string::npos) << not_ready;
  ready = true;
  EXPECT_NE(get(port, "/readyz").find(" 200 "), std::string::npos);

  (*e)->stop();
  EXPECT_EQ(connect_to(port), -1) << "still listening after stop()";
  (*e)->stop();  // idempotent
}

TEST(endpoint_test, a_bad_address_is_an_error_value) {
  auto e = endpoint::start("127.0.0.1", route_table{});
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("\"127.0.0.1\""), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace denormd::http
