// Decoding and encoding of wire messages without a server.

#include "wire_codec.h"

#include <gtest/gtest.h>

#include "bson/convert.h"

namespace mongo_emulator {
namespace {

bson::document ping() {
  return bson::document{{"ping", std::int32_t{1}}, {"$db", "admin"}};
}

expected<request> decode(const std::vector<std::uint8_t>& bytes) {
  auto h = parse_header(bytes);
  if (!h) return h.error();
  return parse_request(*h, std::span(bytes).subspan(header_size));
}

TEST(wire_codec, op_msg_round_trip) {
  auto req = decode(encode_op_msg(7, ping()));
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_EQ(req->command, "ping");
  EXPECT_EQ(req->db, "admin");
  EXPECT_FALSE(req->legacy);
  EXPECT_FALSE(req->more_to_come);
  EXPECT_EQ(req->header.request_id, 7);
}

TEST(wire_codec, op_query_namespace_gives_the_database) {
  auto req = decode(encode_op_query(3, "test.$cmd", bson::document{{"isMaster", std::int32_t{1}}}));
  ASSERT_TRUE(req) << req.error().message;
  EXPECT_TRUE(req->legacy);
  EXPECT_EQ(req->db, "test");
  EXPECT_EQ(req->command, "isMaster");
}

TEST(wire_codec, reply_answers_the_request_in_its_opcode) {
  auto req = decode(encode_op_query(11, "admin.$cmd", bson::document{{"hello", std::int32_t{1}}}));
  ASSERT_TRUE(req);
  auto bytes = encode_reply(*req, 1, bson::document{{"ok", 1.0}});
  auto h = parse_header(bytes);
  ASSERT_FALSE(h);  // OP_REPLY is not a request opcode
  ASSERT_GE(bytes.size(), 36U);
  EXPECT_EQ(bytes[12], 1);  // OP_REPLY
  EXPECT_EQ(bytes[8], 11);  // responseTo
}

TEST(wire_codec, rejects_bad_lengths_and_opcodes) {
  auto bytes = encode_op_msg(1, ping());
  auto short_len = bytes;
  short_len[0] = 10;
  EXPECT_FALSE(parse_header(short_len));
  auto huge = bytes;
  huge[3] = 0x7F;
  EXPECT_FALSE(parse_header(huge));
  auto bad_op = bytes;
  bad_op[12] = 0x42;
  EXPECT_FALSE(parse_header(bad_op));
  auto compressed = bytes;
  compressed[12] = static_cast<std::uint8_t>(op_compressed & 0xFF);
  compressed[13] = static_cast<std::uint8_t>(op_compressed >> 8);
  EXPECT_FALSE(parse_header(compressed));
}

TEST(wire_codec, rejects_truncated_and_corrupt_bodies) {
  const auto bytes = encode_op_msg(1, ping());
  auto h = parse_header(bytes);
  ASSERT_TRUE(h);
  // Body shorter than the header claims.
  EXPECT_FALSE(
      parse_request(*h, std::span(bytes).subspan(header_size, bytes.size() - header_size - 3)));
  // Corrupt inner BSON length.
  auto corrupt = bytes;
  corrupt[header_size + 5] = 0xFF;
  EXPECT_FALSE(parse_request(*h, std::span(corrupt).subspan(header_size)));
  // Unknown section kind.
  auto kind = bytes;
  kind[header_size + 4] = 7;
  EXPECT_FALSE(parse_request(*h, std::span(kind).subspan(header_size)));
  // Unknown required flag bit.
  auto flags = bytes;
  flags[header_size] = 0x08;
  EXPECT_FALSE(parse_request(*h, std::span(flags).subspan(header_size)));
}

TEST(wire_codec, more_to_come_is_reported) {
  auto req = decode(encode_op_msg(1, ping(), 2));
  ASSERT_TRUE(req);
  EXPECT_TRUE(req->more_to_come);
}

}  // namespace
}  // namespace mongo_emulator
