#pragma once
// The fixture the conformance suites share: the server under test (test_uri(): the emulator,
// or DENORMD_TEST_URI), a libmongoc client, and a database of its own per test, dropped after.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "bson/json.h"
#include "bson/value.h"
#include "emulator_process.h"
#include "mongo_test_client.h"

// gtest prints documents and values as Extended JSON in failure messages.
namespace denormd::bson {
void PrintTo(const document& d, std::ostream* os);
void PrintTo(const value& v, std::ostream* os);
}  // namespace denormd::bson

namespace mongo_emulator::test {

namespace bson = denormd::bson;
using denormd::test::change_stream_ptr;
using denormd::test::collection_ptr;
using denormd::test::command_reply;
using denormd::test::test_client;

// Extended JSON to a document; a typo in a test aborts with the parser's message.
bson::document J(std::string_view json);
bson::array A(std::string_view json_array);

// "host:port" of a mongodb:// URI.
std::string host_port_of(const std::string& uri);

// The value at a dotted path, or null when missing (for terse assertions).
const bson::value& at(const bson::document& d, std::string_view path);

class emulator_test : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  test_client& client() { return *client_; }
  const std::string& db() const { return db_; }
  const std::string& uri() const { return uri_; }
  std::string host_port() const { return host_port_of(uri_); }

  // Runs a command on the test database (or `db`); the raw outcome.
  command_reply run(const bson::document& command, std::string_view db = {});
  // Runs a command that must succeed and returns its reply.
  bson::document run_ok(const bson::document& command, std::string_view db = {});
  // Runs a command that must fail with `code` and returns its reply.
  bson::document run_fail(const bson::document& command, int code, std::string_view db = {});

  void insert(std::string_view coll, std::string_view json_docs_array);
  collection_ptr collection(std::string_view coll) { return client_->collection(db_, coll); }
  // A change stream through libmongoc; fails the test if the initial aggregate failed.
  change_stream_ptr watch(std::string_view coll, std::string_view pipeline_json = "[]",
                          std::string_view opts_json = "{}");

  // Opens a change stream by command and returns the aggregate reply.
  bson::document open_stream(std::string_view coll, std::string_view spec_json = "{}",
                             std::string_view extra_stages_json = "[]", std::string_view db = {});
  bson::document get_more(const bson::document& cursor_reply, int max_time_ms = 100,
                          std::string_view db = {});
  static std::int64_t cursor_id(const bson::document& reply);
  static const bson::array& batch(const bson::document& reply);

 private:
  std::string uri_;
  std::unique_ptr<test_client> client_;
  std::string db_;
};

}  // namespace mongo_emulator::test
