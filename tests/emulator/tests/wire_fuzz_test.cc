// Random and malformed wire messages: the decoder never crashes in-process, and the server
// closes only the offending connection while it keeps serving everyone else.

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <thread>

#include "bson/convert.h"
#include "emulator_fixture.h"
#include "raw_client.h"
#include "wire_codec.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using bytes = std::vector<std::uint8_t>;

// EMULATOR_FUZZ_SEED and EMULATOR_FUZZ_SCALE vary and lengthen a run (defaults: fixed, 1).
unsigned env_number(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? static_cast<unsigned>(std::strtoul(v, nullptr, 10))
                                    : fallback;
}

void put32(bytes& b, std::size_t at, std::int32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + static_cast<std::size_t>(i)] =
        static_cast<std::uint8_t>(static_cast<std::uint32_t>(v) >> (8 * i));
}

bytes valid_command(std::mt19937& rng) {
  static const char* const commands[] = {
      R"({"ping": 1, "$db": "admin"})",
      R"({"insert": "c", "documents": [{"_id": 1, "a": [1, {"b": "x"}]}], "$db": "fz"})",
      R"({"find": "c", "filter": {"a": {"$gt": 0}}, "$db": "fz"})",
      R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"a.0": 2}}}], "$db": "fz"})",
      R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}, "$db": "fz"})",
      R"({"hello": 1, "helloOk": true, "$db": "admin"})"};
  return encode_op_msg(static_cast<std::int32_t>(rng()), J(commands[rng() % 6]));
}

// A deeply nested document, past any sane depth limit.
bytes deep_document(int depth) {
  bytes doc;
  // Built inside out: {a: {a: {... {} ...}}}
  doc = {5, 0, 0, 0, 0};
  for (int i = 0; i < depth; ++i) {
    bytes outer(4, 0);
    outer.push_back(0x03);
    outer.push_back('a');
    outer.push_back(0);
    outer.insert(outer.end(), doc.begin(), doc.end());
    outer.push_back(0);
    put32(outer, 0, static_cast<std::int32_t>(outer.size()));
    doc = std::move(outer);
  }
  return doc;
}

// One malformed message of a randomly chosen kind.
bytes malformed(std::mt19937& rng) {
  bytes m = valid_command(rng);
  switch (rng() % 12) {
    case 0: {  // random garbage
      bytes g(1 + rng() % 300);
      for (auto& b : g)
        b = static_cast<std::uint8_t>(rng());
      return g;
    }
    case 1:
      put32(m, 0, static_cast<std::int32_t>(rng() % 16));
      return m;  // too short
    case 2:
      put32(m, 0, -static_cast<std::int32_t>(rng() % 1000) - 1);
      return m;  // negative
    case 3:
      put32(m, 0, 48000001 + static_cast<std::int32_t>(rng() % 1000));
      return m;
    case 4:
      put32(m, 12, static_cast<std::int32_t>(rng()));
      return m;  // bad opcode
    case 5:
      put32(m, 16, static_cast<std::int32_t>(rng()));
      return m;  // bad flag bits
    case 6:
      m.resize(16 + rng() % (m.size() - 16));
      return m;  // truncated
    case 7: {    // flipped bytes in the body
      for (int i = 0; i < 1 + static_cast<int>(rng() % 4); ++i)
        m[16 + rng() % (m.size() - 16)] = static_cast<std::uint8_t>(rng());
      return m;
    }
    case 8: {  // kind-1 section with a lying size
      bytes s(16, 0);
      s.insert(s.end(), {0, 0, 0, 0, 1});
      bytes size(4);
      s.insert(s.end(), size.begin(), size.end());
      put32(s, 21, static_cast<std::int32_t>(rng()));
      s.insert(s.end(), {'d', 'o', 'c', 's', 0, 5, 0, 0, 0, 0});
      put32(s, 0, static_cast<std::int32_t>(s.size()));
      put32(s, 12, op_msg);
      return s;
    }
    case 9: {  // deep nesting
      bytes s(16, 0);
      s.insert(s.end(), {0, 0, 0, 0, 0});
      const auto doc = deep_document(150 + static_cast<int>(rng() % 400));
      s.insert(s.end(), doc.begin(), doc.end());
      put32(s, 0, static_cast<std::int32_t>(s.size()));
      put32(s, 12, op_msg);
      return s;
    }
    case 10: {  // OP_QUERY with an unterminated namespace
      bytes s(16, 0);
      s.insert(s.end(), {0, 0, 0, 0, 'a', 'd', 'm', 'i', 'n'});
      put32(s, 0, static_cast<std::int32_t>(s.size()));
      put32(s, 12, op_query);
      return s;
    }
    default:
      put32(m, 12, op_compressed);
      return m;
  }
}

TEST(wire_fuzz, decoder_survives_random_input) {
  std::mt19937 rng(env_number("EMULATOR_FUZZ_SEED", 12345));
  const unsigned rounds = 20000 * env_number("EMULATOR_FUZZ_SCALE", 1);
  for (unsigned i = 0; i < rounds; ++i) {
    const bytes m = malformed(rng);
    auto h = parse_header(m);
    if (!h) continue;
    if (m.size() < header_size) continue;
    auto r = parse_request(*h, std::span(m).subspan(header_size));
    (void)r;
  }
}

TEST(wire_fuzz, server_keeps_serving_other_connections) {
  if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs its own emulator";
  auto server = denormd::test::emulator_process::start();
  ASSERT_TRUE(server) << server.error().message;
  auto sentinel = raw_client::connect(server->host_port());
  ASSERT_TRUE(sentinel);
  std::mt19937 rng(env_number("EMULATOR_FUZZ_SEED", 987654321));
  const int batches = 10 * static_cast<int>(env_number("EMULATOR_FUZZ_SCALE", 1));

  const auto attack = [&](unsigned seed, int rounds) {
    std::mt19937 local(seed);
    for (int i = 0; i < rounds; ++i) {
      auto c = raw_client::connect(server->host_port());
      if (!c) continue;
      // Sometimes a valid exchange first, so the bad message hits a live session.
      if (local() % 3 == 0) {
        c->send(valid_command(local));
        c->receive(500ms);
      }
      c->send(malformed(local));
      c->receive(20ms);
    }
  };
  for (int batch_no = 0; batch_no < batches; ++batch_no) {
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 3; ++t)
      threads.emplace_back(attack, static_cast<unsigned>(rng()), 20);
    for (auto& t : threads)
      t.join();
    auto pong = sentinel->command(J(R"({"ping": 1, "$db": "admin"})"));
    ASSERT_TRUE(pong) << "sentinel connection lost after batch " << batch_no;
    ASSERT_EQ(at(*pong, "ok"), bson::value(1.0));
    ASSERT_TRUE(server->running());
  }
  // New connections still work too.
  auto fresh = raw_client::connect(server->host_port());
  ASSERT_TRUE(fresh);
  auto pong = fresh->command(J(R"({"ping": 1, "$db": "admin"})"));
  ASSERT_TRUE(pong);
  EXPECT_EQ(server->stop(), 0);
}

}  // namespace
}  // namespace mongo_emulator::test
