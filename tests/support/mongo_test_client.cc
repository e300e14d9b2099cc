#include "mongo_test_client.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace denormd::test {

void init_mongoc() {
  static std::once_flag once;
  std::call_once(once, [] {
    mongoc_init();
    std::atexit(mongoc_cleanup);
  });
}

expected<test_client> test_client::connect(const std::string& uri, const std::string& app_name) {
  init_mongoc();
  bson_error_t error;
  uri_ptr parsed(mongoc_uri_new_with_error(uri.c_str(), &error));
  if (!parsed) return fail(std::string("bad URI: ") + error.message);
  mongoc_uri_set_appname(parsed.get(), app_name.c_str());
  test_client c;
  c.client_.reset(mongoc_client_new_from_uri_with_error(parsed.get(), &error));
  if (!c.client_) return fail(std::string("cannot create client: ") + error.message);
  mongoc_client_set_error_api(c.client_.get(), MONGOC_ERROR_API_VERSION_2);
  return c;
}

collection_ptr test_client::collection(std::string_view db, std::string_view name) const {
  return collection_ptr(mongoc_client_get_collection(client_.get(), std::string(db).c_str(),
                                                     std::string(name).c_str()));
}

command_reply test_client::run(std::string_view db, const bson::document& command) const {
  auto cmd = bson::to_bson(command);
  bson_t reply;
  bson_error_t error;
  const bool ok = mongoc_client_command_simple(client_.get(), std::string(db).c_str(), cmd.get(),
                                               nullptr, &reply, &error);
  command_reply out;
  out.ok = ok;
  if (!ok) {
    out.code = static_cast<int>(error.code);
    out.message = error.message;
  }
  if (auto doc = bson::from_bson(reply)) out.reply = std::move(doc).value();
  bson_destroy(&reply);
  return out;
}

expected<bson::document> test_client::command(std::string_view db,
                                              const bson::document& command) const {
  auto r = run(db, command);
  if (!r.ok) return fail(r.message, r.code);
  return std::move(r.reply);
}

std::vector<bson::document> next_events(mongoc_change_stream_t* stream, std::size_t n,
                                        std::chrono::milliseconds timeout) {
  std::vector<bson::document> out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    const bson_t* doc = nullptr;
    if (mongoc_change_stream_next(stream, &doc)) {
      if (auto d = bson::from_bson(*doc)) out.push_back(std::move(d).value());
      continue;
    }
    const bson_t* reply = nullptr;
    bson_error_t error;
    if (mongoc_change_stream_error_document(stream, &error, &reply)) break;
  }
  return out;
}

}  // namespace denormd::test
