#pragma once
// MongoDB wire messages: decoding requests (OP_QUERY, OP_MSG) and encoding replies (OP_REPLY,
// OP_MSG). Pure functions over byte buffers; thread-safe. Anything malformed is an error value
// (the connection then closes), never an exception or a crash.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

inline constexpr std::int32_t op_reply = 1;
inline constexpr std::int32_t op_query = 2004;
inline constexpr std::int32_t op_compressed = 2012;
inline constexpr std::int32_t op_msg = 2013;
inline constexpr std::size_t header_size = 16;
inline constexpr std::int32_t max_message_size = 48000000;  // as announced in hello

struct message_header {
  std::int32_t length = 0;  // including the header
  std::int32_t request_id = 0;
  std::int32_t response_to = 0;
  std::int32_t op_code = 0;
};

// One command as the server executes it, whatever the opcode it arrived in.
struct request {
  message_header header;
  bool legacy = false;        // OP_QUERY: answered with OP_REPLY
  bool more_to_come = false;  // OP_MSG moreToCome: execute, send no reply
  std::string db;             // from `$db` or the OP_QUERY namespace
  std::string command;        // first key of the body
  bson::document body;        // kind-1 document sequences merged in as arrays
  // The fields of `body` that came as document sequences.
  std::vector<std::string> sequence_fields;
};

// Decodes the 16-byte header and checks the length bounds.
expected<message_header> parse_header(std::span<const std::uint8_t> bytes);

// Decodes the message body (everything after the header).
expected<request> parse_request(const message_header& header, std::span<const std::uint8_t> body);

// Encodes `reply` as the answer to `req` (OP_REPLY for OP_QUERY, else OP_MSG with one kind-0
// section, flags 0, no checksum).
std::vector<std::uint8_t> encode_reply(const request& req, std::int32_t request_id,
                                       const bson::document& reply);

// Encodes a request (for tests and benchmarks that speak the protocol directly).
std::vector<std::uint8_t> encode_op_msg(std::int32_t request_id, const bson::document& body,
                                        std::uint32_t flags = 0);
std::vector<std::uint8_t> encode_op_query(std::int32_t request_id, std::string_view full_name,
                                          const bson::document& query);

}  // namespace mongo_emulator
