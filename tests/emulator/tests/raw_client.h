#pragma once
// A blocking TCP client that speaks the wire protocol by hand, for tests that need exact
// control over the bytes (legacy opcodes, flag bits, malformed messages). Every call is bounded
// by a timeout. Not thread-safe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "wire_codec.h"

namespace mongo_emulator::test {

struct raw_reply {
  message_header header;
  std::int32_t response_flags = 0;   // OP_REPLY responseFlags, or OP_MSG flagBits
  std::int32_t number_returned = 0;  // OP_REPLY only
  bson::document doc;
};

class raw_client {
 public:
  // Connects to "host:port"; nullopt when the connection fails.
  static std::optional<raw_client> connect(const std::string& host_port);
  raw_client(raw_client&& other) noexcept;
  raw_client& operator=(raw_client&&) = delete;
  ~raw_client();

  bool send(const std::vector<std::uint8_t>& bytes);
  // The next reply; nullopt on timeout, close or garbage.
  std::optional<raw_reply> receive(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // True when the server closed the connection (EOF) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Sends an OP_MSG command and returns the reply document.
  std::optional<bson::document> command(const bson::document& body);

 private:
  explicit raw_client(int fd) : fd_(fd) {}
  bool read_exact(std::uint8_t* out, std::size_t n, std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::int32_t next_id_ = 1;
};

}  // namespace mongo_emulator::test
