#include "raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "bson/convert.h"

namespace mongo_emulator::test {

namespace {

std::int32_t le32(const std::uint8_t* p) {
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
      (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24));
}

}  // namespace

std::optional<raw_client> raw_client::connect(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(host_port.substr(colon + 1))));
  if (::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr) != 1)
    return std::nullopt;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return raw_client(fd);
}

raw_client::raw_client(raw_client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), next_id_(other.next_id_) {}

raw_client::~raw_client() {
  if (fd_ >= 0) ::close(fd_);
}

bool raw_client::send(const std::vector<std::uint8_t>& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

bool raw_client::read_exact(std::uint8_t* out, std::size_t n,
                            std::chrono::steady_clock::time_point deadline) {
  std::size_t got = 0;
  while (got < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t k = ::recv(fd_, out + got, n - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    got += static_cast<std::size_t>(k);
  }
  return true;
}

std::optional<raw_reply> raw_client::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint8_t header[16];
  if (!read_exact(header, sizeof header, deadline)) return std::nullopt;
  raw_reply r;
  r.header.length = le32(header);
  r.header.request_id = le32(header + 4);
  r.header.response_to = le32(header + 8);
  r.header.op_code = le32(header + 12);
  if (r.header.length < 21 || r.header.length > max_message_size) return std::nullopt;
  std::vector<std::uint8_t> body(static_cast<std::size_t>(r.header.length) - 16);
  if (!read_exact(body.data(), body.size(), deadline)) return std::nullopt;
  std::size_t doc_at = 0;
  if (r.header.op_code == op_reply) {
    if (body.size() < 20) return std::nullopt;
    r.response_flags = le32(body.data());
    r.number_returned = le32(body.data() + 16);
    doc_at = 20;
  } else if (r.header.op_code == op_msg) {
    if (body.size() < 5 || body[4] != 0) return std::nullopt;
    r.response_flags = le32(body.data());
    doc_at = 5;
  } else {
    return std::nullopt;
  }
  auto doc = bson::from_bson(std::span<const std::uint8_t>(body).subspan(doc_at));
  if (!doc) return std::nullopt;
  r.doc = std::move(doc).value();
  return r;
}

bool raw_client::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint8_t buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t k = ::recv(fd_, buf, sizeof buf, 0);
    if (k == 0) return true;
    if (k < 0) return errno == ECONNRESET;
  }
}

std::optional<bson::document> raw_client::command(const bson::document& body) {
  if (!send(encode_op_msg(next_id_++, body))) return std::nullopt;
  auto r = receive();
  if (!r) return std::nullopt;
  return std::move(r->doc);
}

}  // namespace mongo_emulator::test
