// Handshake and wire protocol: both URI forms through libmongoc, hello's fields and BSON types,
// and the opcode/flag rules of reference §1 over a raw socket.

#include <gtest/gtest.h>

#include "emulator_fixture.h"
#include "raw_client.h"
#include "wire_codec.h"

namespace mongo_emulator::test {
namespace {

class handshake : public emulator_test {};

TEST_F(handshake, replica_set_uri_selects_the_primary) {
  auto c = test_client::connect("mongodb://" + host_port() + "/?replicaSet=rs0");
  ASSERT_TRUE(c);
  auto r = c->command("admin", J(R"({"ping": 1})"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(at(*r, "ok"), bson::value(1.0));
}

TEST_F(handshake, direct_connection_uri_works) {
  auto c = test_client::connect("mongodb://" + host_port() + "/?directConnection=true");
  ASSERT_TRUE(c);
  auto r = c->command("admin", J(R"({"ping": 1})"));
  ASSERT_TRUE(r) << r.error().message;
}

TEST_F(handshake, hello_fields_have_mongodb_types) {
  for (const char* name : {"hello", "isMaster", "ismaster"}) {
    bson::document cmd;
    cmd.append(name, std::int32_t{1});
    const auto r = run_ok(cmd, "admin");
    EXPECT_EQ(at(r, "isWritablePrimary"), bson::value(true)) << name;
    EXPECT_EQ(at(r, "ismaster"), bson::value(true)) << name;
    EXPECT_EQ(at(r, "secondary"), bson::value(false));
    EXPECT_EQ(at(r, "setName"), bson::value("rs0"));
    EXPECT_EQ(at(r, "setVersion"), bson::value(std::int32_t{1}));
    EXPECT_TRUE(at(r, "electionId").is<bson::oid>());
    EXPECT_EQ(at(r, "electionId").as<bson::oid>().to_hex(), "7fffffff0000000000000001");
    EXPECT_EQ(at(r, "hosts"), bson::value(bson::array{bson::value(host_port())}));
    EXPECT_EQ(at(r, "primary"), bson::value(host_port()));
    EXPECT_EQ(at(r, "me"), bson::value(host_port()));
    for (const char* f :
         {"minWireVersion", "maxWireVersion", "maxBsonObjectSize", "maxMessageSizeBytes",
          "maxWriteBatchSize", "logicalSessionTimeoutMinutes", "connectionId"})
      EXPECT_TRUE(at(r, f).is<std::int32_t>()) << f;
    EXPECT_EQ(at(r, "minWireVersion"), bson::value(std::int32_t{0}));
    EXPECT_EQ(at(r, "maxWireVersion"), bson::value(std::int32_t{17}));
    EXPECT_EQ(at(r, "maxBsonObjectSize"), bson::value(std::int32_t{16777216}));
    EXPECT_EQ(at(r, "maxMessageSizeBytes"), bson::value(std::int32_t{48000000}));
    EXPECT_EQ(at(r, "maxWriteBatchSize"), bson::value(std::int32_t{100000}));
    EXPECT_EQ(at(r, "logicalSessionTimeoutMinutes"), bson::value(std::int32_t{30}));
    EXPECT_TRUE(at(r, "localTime").is<bson::date_time>());
    EXPECT_TRUE(at(r, "lastWrite.lastWriteDate").is<bson::date_time>());
    EXPECT_EQ(at(r, "readOnly"), bson::value(false));
    EXPECT_EQ(at(r, "ok"), bson::value(1.0));
    EXPECT_TRUE(at(r, "operationTime").is<bson::timestamp>());
    EXPECT_TRUE(at(r, "$clusterTime.clusterTime").is<bson::timestamp>());
    EXPECT_TRUE(at(r, "$clusterTime.signature.keyId").is<std::int64_t>());
    const auto& hash = at(r, "$clusterTime.signature.hash");
    ASSERT_TRUE(hash.is<bson::binary>());
    EXPECT_EQ(hash.as<bson::binary>().subtype, 0);
    EXPECT_EQ(hash.as<bson::binary>().data.size(), 20U);
    EXPECT_FALSE(r.contains("topologyVersion"));
    EXPECT_FALSE(r.contains("compression"));
    EXPECT_FALSE(r.contains("helloOk"));
  }
  const auto r = run_ok(J(R"({"hello": 1, "helloOk": true})"), "admin");
  EXPECT_EQ(at(r, "helloOk"), bson::value(true));
}

TEST_F(handshake, connection_ids_differ_per_connection) {
  auto a = raw_client::connect(host_port());
  auto b = raw_client::connect(host_port());
  ASSERT_TRUE(a && b);
  auto ra = a->command(J(R"({"hello": 1, "$db": "admin"})"));
  auto rb = b->command(J(R"({"hello": 1, "$db": "admin"})"));
  ASSERT_TRUE(ra && rb);
  EXPECT_NE(at(*ra, "connectionId"), at(*rb, "connectionId"));
}

TEST_F(handshake, op_query_hello_gets_an_op_reply) {
  for (const char* name : {"isMaster", "ismaster", "hello"}) {
    auto c = raw_client::connect(host_port());
    ASSERT_TRUE(c);
    bson::document q;
    q.append(name, std::int32_t{1});
    q.append("helloOk", true);
    q.append("client", J(R"({"driver": {"name": "raw", "version": "1"}})"));
    ASSERT_TRUE(c->send(encode_op_query(77, "admin.$cmd", q)));
    auto r = c->receive();
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->header.op_code, op_reply);
    EXPECT_EQ(r->header.response_to, 77);
    EXPECT_EQ(r->number_returned, 1);
    EXPECT_EQ(r->response_flags, 8);
    EXPECT_EQ(at(r->doc, "ismaster"), bson::value(true));
    EXPECT_EQ(at(r->doc, "helloOk"), bson::value(true));
    // The connection keeps working with OP_MSG afterwards.
    auto ping = c->command(J(R"({"ping": 1, "$db": "admin"})"));
    ASSERT_TRUE(ping);
    EXPECT_EQ(at(*ping, "ok"), bson::value(1.0));
  }
}

TEST_F(handshake, op_query_wrapped_in_dollar_query_is_unwrapped) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(encode_op_query(
      5, "admin.$cmd",
      J(R"({"$query": {"ismaster": 1}, "$readPreference": {"mode": "primaryPreferred"}})"))));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(at(r->doc, "ismaster"), bson::value(true));
}

TEST_F(handshake, op_query_other_commands_are_refused_like_mongodb_6) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(encode_op_query(9, "admin.$cmd", J(R"({"ping": 1})"))));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header.op_code, op_reply);
  EXPECT_EQ(at(r->doc, "ok"), bson::value(0.0));
  EXPECT_EQ(at(r->doc, "code"), bson::value(std::int32_t{352}));
}

TEST_F(handshake, op_msg_reply_has_one_kind0_section_and_response_to) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(encode_op_msg(4242, J(R"({"ping": 1, "$db": "admin"})"))));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header.op_code, op_msg);
  EXPECT_EQ(r->header.response_to, 4242);
  EXPECT_EQ(r->response_flags, 0);
  EXPECT_EQ(at(r->doc, "ok"), bson::value(1.0));
}

TEST_F(handshake, op_msg_without_db_is_an_error) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  auto r = c->command(J(R"({"ping": 1})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "code"), bson::value(std::int32_t{40571}));
}

// Builds an OP_MSG by hand: flag bits, a kind-0 body, kind-1 sequences, an optional checksum.
std::vector<std::uint8_t> build_op_msg(std::uint32_t flags, const bson::document& body,
                                       const std::vector<std::pair<std::string, bson::array>>& seqs,
                                       bool checksum) {
  std::vector<std::uint8_t> out(16, 0);
  const auto put32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  put32(flags);
  out.push_back(0);
  bson::append_bytes(body, out);
  for (const auto& [id, docs] : seqs) {
    out.push_back(1);
    const std::size_t size_at = out.size();
    put32(0);
    out.insert(out.end(), id.begin(), id.end());
    out.push_back(0);
    for (const auto& d : docs)
      bson::append_bytes(d.as_document(), out);
    const auto size = static_cast<std::uint32_t>(out.size() - size_at);
    for (int i = 0; i < 4; ++i)
      out[size_at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(size >> (8 * i));
  }
  if (checksum) put32(0xDEADBEEF);  // the server may skip verification, but must strip it
  const auto len = static_cast<std::uint32_t>(out.size());
  const std::uint32_t header[4] = {len, 99, 0, static_cast<std::uint32_t>(op_msg)};
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 4; ++i)
      out[static_cast<std::size_t>(w * 4 + i)] = static_cast<std::uint8_t>(header[w] >> (8 * i));
  return out;
}

TEST_F(handshake, kind1_sequences_merge_into_the_body) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  bson::document body;
  body.append("insert", "seq");
  body.append("$db", db());
  ASSERT_TRUE(
      c->send(build_op_msg(0, body, {{"documents", A(R"([{"_id": 1}, {"_id": 2}])")}}, false)));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(at(r->doc, "n"), bson::value(std::int32_t{2}));
}

TEST_F(handshake, checksum_is_stripped) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(build_op_msg(1, J(R"({"ping": 1, "$db": "admin"})"), {}, true)));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(at(r->doc, "ok"), bson::value(1.0));
}

TEST_F(handshake, more_to_come_executes_without_reply) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  bson::document body;
  body.append("insert", "w0");
  body.append("documents", A(R"([{"_id": 1}])"));
  body.append("writeConcern", J(R"({"w": 0})"));
  body.append("$db", db());
  ASSERT_TRUE(c->send(build_op_msg(2, body, {}, false)));
  // The next reply on this connection answers the count, not the insert.
  bson::document count;
  count.append("count", "w0");
  count.append("$db", db());
  ASSERT_TRUE(c->send(encode_op_msg(31, count)));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header.response_to, 31);
  EXPECT_EQ(at(r->doc, "n"), bson::value(std::int32_t{1}));
}

TEST_F(handshake, exhaust_allowed_bit_is_accepted) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(build_op_msg(1U << 16, J(R"({"ping": 1, "$db": "admin"})"), {}, false)));
  auto r = c->receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(at(r->doc, "ok"), bson::value(1.0));
}

TEST_F(handshake, unknown_required_flag_bit_closes_the_connection) {
  auto c = raw_client::connect(host_port());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->send(build_op_msg(1U << 4, J(R"({"ping": 1, "$db": "admin"})"), {}, false)));
  EXPECT_TRUE(c->closed_by_peer());
}

}  // namespace
}  // namespace mongo_emulator::test
