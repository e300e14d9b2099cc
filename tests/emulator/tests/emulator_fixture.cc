#include "emulator_fixture.h"

#include <cstdlib>
#include <iostream>
#include <ostream>

namespace denormd::bson {
void PrintTo(const document& d, std::ostream* os) {
  *os << to_json(d);
}
void PrintTo(const value& v, std::ostream* os) {
  *os << to_json(v);
}
}  // namespace denormd::bson

namespace mongo_emulator::test {

bson::document J(std::string_view json) {
  auto doc = bson::parse_json(json);
  if (!doc) {
    std::cerr << "bad JSON in test: " << doc.error().message << "\n" << json << std::endl;
    std::abort();
  }
  return std::move(doc).value();
}

bson::array A(std::string_view json_array) {
  auto wrapped = J("{\"a\": " + std::string(json_array) + "}");
  return wrapped.get("a")->as_array();
}

std::string host_port_of(const std::string& uri) {
  std::string rest = uri.substr(uri.find("://") + 3);
  rest = rest.substr(0, rest.find_first_of("/?"));
  if (const auto at_sign = rest.rfind('@'); at_sign != std::string::npos)
    rest = rest.substr(at_sign + 1);
  return rest.substr(0, rest.find(','));
}

const bson::value& at(const bson::document& d, std::string_view path) {
  static const bson::value null_value;
  const auto* v = d.find_path(path);
  return v ? *v : null_value;
}

void emulator_test::SetUp() {
  uri_ = denormd::test::test_uri();
  auto c = test_client::connect(uri_);
  ASSERT_TRUE(c) << c.error().message;
  client_ = std::make_unique<test_client>(std::move(c).value());
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  db_ = std::string("t_") + info->name();
  for (auto& ch : db_) {
    if (ch == '/' || ch == '.' || ch == ' ' || ch == '"' || ch == '$') ch = '_';
  }
  if (db_.size() > 60) db_.resize(60);
  run_ok(J(R"({"dropDatabase": 1})"));
}

void emulator_test::TearDown() {
  if (!client_) return;
  client_->run("admin", J(R"({"configureFailPoint": "failCommand", "mode": "off"})"));
  client_->run(db_, J(R"({"dropDatabase": 1})"));
}

command_reply emulator_test::run(const bson::document& command, std::string_view db) {
  return client_->run(db.empty() ? db_ : db, command);
}

bson::document emulator_test::run_ok(const bson::document& command, std::string_view db) {
  auto r = run(command, db);
  EXPECT_TRUE(r.ok) << bson::to_json(command) << " failed: " << r.message << " (" << r.code << ") "
                    << bson::to_json(r.reply);
  return std::move(r.reply);
}

bson::document emulator_test::run_fail(const bson::document& command, int code,
                                       std::string_view db) {
  auto r = run(command, db);
  EXPECT_FALSE(r.ok) << bson::to_json(command) << " succeeded: " << bson::to_json(r.reply);
  EXPECT_EQ(r.code, code) << r.message << " " << bson::to_json(r.reply);
  return std::move(r.reply);
}

void emulator_test::insert(std::string_view coll, std::string_view json_docs_array) {
  bson::document cmd;
  cmd.append("insert", std::string(coll));
  cmd.append("documents", A(json_docs_array));
  run_ok(cmd);
}

change_stream_ptr emulator_test::watch(std::string_view coll, std::string_view pipeline_json,
                                       std::string_view opts_json) {
  auto pipeline = bson::to_bson(J("{\"pipeline\": " + std::string(pipeline_json) + "}"));
  auto opts = bson::to_bson(J(opts_json));
  auto c = collection(coll);
  change_stream_ptr stream(mongoc_collection_watch(c.get(), pipeline.get(), opts.get()));
  const bson_t* reply = nullptr;
  bson_error_t error;
  EXPECT_FALSE(mongoc_change_stream_error_document(stream.get(), &error, &reply)) << error.message;
  return stream;
}

bson::document emulator_test::open_stream(std::string_view coll, std::string_view spec_json,
                                          std::string_view extra_stages_json, std::string_view db) {
  bson::document cmd;
  if (coll.empty()) {
    cmd.append("aggregate", std::int32_t{1});
  } else {
    cmd.append("aggregate", std::string(coll));
  }
  bson::array pipeline;
  pipeline.emplace_back(bson::document{{"$changeStream", J(spec_json)}});
  for (auto& stage : A(extra_stages_json))
    pipeline.push_back(std::move(stage));
  cmd.append("pipeline", std::move(pipeline));
  cmd.append("cursor", bson::document{});
  return run_ok(cmd, db);
}

bson::document emulator_test::get_more(const bson::document& cursor_reply, int max_time_ms,
                                       std::string_view db) {
  const std::string ns = at(cursor_reply, "cursor.ns").as_string();
  bson::document cmd;
  cmd.append("getMore", cursor_id(cursor_reply));
  cmd.append("collection", ns.substr(ns.find('.') + 1));
  cmd.append("maxTimeMS", std::int32_t{max_time_ms});
  return run_ok(cmd, db.empty() ? std::string_view(ns).substr(0, ns.find('.')) : db);
}

std::int64_t emulator_test::cursor_id(const bson::document& reply) {
  const auto& id = at(reply, "cursor.id");
  return id.is<std::int64_t>() ? id.as<std::int64_t>() : -1;
}

const bson::array& emulator_test::batch(const bson::document& reply) {
  static const bson::array empty;
  const auto* c = reply.get("cursor");
  if (c == nullptr || !c->is_document()) return empty;
  for (const char* name : {"firstBatch", "nextBatch"}) {
    if (const auto* b = c->as_document().get(name); b != nullptr && b->is_array())
      return b->as_array();
  }
  return empty;
}

}  // namespace mongo_emulator::test
