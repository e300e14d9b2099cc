#pragma once
// A small RAII libmongoc client for tests: every handle is owned by c_handle, commands take and
// return bson::document, server errors keep their code (error API v2) and full reply.
// Lifecycle: connect() per test; not thread-safe (like mongoc_client_t). init_mongoc() runs
// mongoc_init once per process.

#include <mongoc/mongoc.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "bson/convert.h"
#include "bson/value.h"
#include "common/expected.h"
#include "common/handle.h"

namespace denormd::test {

using client_ptr = c_handle<mongoc_client_t, mongoc_client_destroy>;
using collection_ptr = c_handle<mongoc_collection_t, mongoc_collection_destroy>;
using database_ptr = c_handle<mongoc_database_t, mongoc_database_destroy>;
using change_stream_ptr = c_handle<mongoc_change_stream_t, mongoc_change_stream_destroy>;
using cursor_ptr = c_handle<mongoc_cursor_t, mongoc_cursor_destroy>;
using bulk_ptr = c_handle<mongoc_bulk_operation_t, mongoc_bulk_operation_destroy>;
using uri_ptr = c_handle<mongoc_uri_t, mongoc_uri_destroy>;

void init_mongoc();

// The outcome of one command, success or not.
struct command_reply {
  bool ok = false;
  int code = 0;  // server error code (or driver error code when no reply came back)
  std::string message;
  bson::document reply;  // the server's reply document (empty after a network error)
};

class test_client {
 public:
  // `app_name` becomes client.application.name (failCommand's appName filter matches it).
  static expected<test_client> connect(const std::string& uri,
                                       const std::string& app_name = "denormd-tests");

  mongoc_client_t* get() const { return client_.get(); }
  collection_ptr collection(std::string_view db, std::string_view name) const;

  command_reply run(std::string_view db, const bson::document& command) const;
  // run() as an expected: the reply on success, else {message, code}.
  expected<bson::document> command(std::string_view db, const bson::document& command) const;

 private:
  client_ptr client_;
};

// Reads a change stream until `n` events arrived or `timeout` passed.
std::vector<bson::document> next_events(mongoc_change_stream_t* stream, std::size_t n,
                                        std::chrono::milliseconds timeout);

}  // namespace denormd::test
