// Update operators end to end: real update and findAndModify commands through libmongoc against
// the running server (mongo-emulator, or DENORMD_TEST_URI), checking the stored document, the
// reply's counts and error codes, and the change event's updateDescription.

#include <gtest/gtest.h>
#include <mongoc/mongoc.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bson/convert.h"
#include "bson/json.h"
#include "emulator_process.h"
#include "mongo_test_client.h"

namespace mongo_emulator::engine::conformance {
namespace {

namespace bson = denormd::bson;
using denormd::test::test_client;

bson::document J(std::string_view json) {
  auto d = bson::parse_json(json);
  EXPECT_TRUE(d) << "bad test JSON: " << json;
  return d ? std::move(d).value() : bson::document{};
}

bson::array A(std::string_view json) {
  auto d = J("{\"v\": " + std::string(json) + "}");
  return d.get("v")->as_array();
}

std::string show(const bson::document& d) {
  return bson::to_json(d, bson::json_mode::canonical);
}

const bson::value& at(const bson::document& d, std::string_view path) {
  static const bson::value missing;
  const auto* v = d.find_path(path);
  return v != nullptr ? *v : missing;
}

// One update statement, its expected reply, the document afterwards and the change event.
struct driver_case {
  const char* name;
  const char* documents;  // inserted first (JSON array)
  const char* statement;  // {q, u, arrayFilters?, upsert?, multi?}
  int n = 1;
  int modified = 1;
  const char* after = nullptr;  // the document with _id `id` afterwards
  // The updateDescription of the one update event; "none" for no event at all.
  const char* description = nullptr;
  int error = 0;                  // expected writeErrors[0].code
  const char* message = nullptr;  // and its errmsg
  bson::value id{std::int32_t{1}};
};

class operators : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = test_client::connect(denormd::test::test_uri());
    ASSERT_TRUE(c) << c.error().message;
    client_ = std::make_unique<test_client>(std::move(c).value());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    db_ = std::string("engine_") + info->name();
    if (db_.size() > 60) db_.resize(60);
    client_->run(db_, J(R"({"dropDatabase": 1})"));
  }
  void TearDown() override {
    if (client_) client_->run(db_, J(R"({"dropDatabase": 1})"));
  }

  bson::document run_ok(const bson::document& command) {
    auto r = client_->run(db_, command);
    EXPECT_TRUE(r.ok) << show(command) << ": " << r.code << " " << r.message;
    return std::move(r.reply);
  }

  void reset(const std::string& coll, const char* documents) {
    client_->run(db_, bson::document{{"drop", coll}});
    bson::document insert{{"insert", coll}, {"documents", A(documents)}};
    run_ok(insert);
  }

  denormd::test::change_stream_ptr watch(const std::string& coll) {
    auto c = client_->collection(db_, coll);
    auto pipeline = bson::to_bson(J("{}"));
    denormd::test::change_stream_ptr stream(
        mongoc_collection_watch(c.get(), pipeline.get(), nullptr));
    const bson_t* error_doc = nullptr;
    bson_error_t error;
    EXPECT_FALSE(mongoc_change_stream_error_document(stream.get(), &error, &error_doc))
        << error.message;
    return stream;
  }

  // The events before a sentinel insert: exactly what the statement under test produced. Each
  // call inserts a sentinel of its own, so one stream can be read this way repeatedly.
  std::vector<bson::document> events_until_sentinel(mongoc_change_stream_t* stream,
                                                    const std::string& coll) {
    const bson::value sentinel("sentinel " + std::to_string(++sentinels_));
    run_ok(bson::document{{"insert", coll},
                          {"documents", bson::array{bson::document{{"_id", sentinel}}}}});
    std::vector<bson::document> out;
    for (int round = 0; round < 50; ++round) {
      for (auto& e : denormd::test::next_events(stream, 1, std::chrono::milliseconds(200))) {
        if (at(e, "documentKey._id") == sentinel) return out;
        out.push_back(std::move(e));
      }
    }
    ADD_FAILURE() << "the sentinel insert never arrived on the change stream";
    return out;
  }

  std::optional<bson::document> find_one(const std::string& coll, const bson::value& id) {
    auto reply = run_ok(bson::document{{"find", coll}, {"filter", bson::document{{"_id", id}}}});
    const auto& batch = at(reply, "cursor.firstBatch");
    if (!batch.is_array() || batch.as_array().empty()) return std::nullopt;
    return batch.as_array().front().as_document();
  }

  void check(const driver_case& c) {
    SCOPED_TRACE(c.name);
    const std::string coll = "c";
    reset(coll, c.documents);
    auto stream = watch(coll);
    const bson::document command{{"update", coll}, {"updates", bson::array{J(c.statement)}}};
    const auto reply = run_ok(command);
    EXPECT_TRUE(at(reply, "n").is<std::int32_t>()) << show(reply);
    EXPECT_TRUE(at(reply, "nModified").is<std::int32_t>()) << show(reply);
    if (c.error != 0) {
      const auto& errors = at(reply, "writeErrors");
      ASSERT_TRUE(errors.is_array() && errors.as_array().size() == 1) << show(reply);
      const auto& e = errors.as_array().front().as_document();
      EXPECT_EQ(at(e, "code"), bson::value(std::int32_t(c.error))) << show(reply);
      EXPECT_EQ(at(e, "index"), bson::value(std::int32_t{0}));
      if (c.message != nullptr) {
        EXPECT_EQ(at(e, "errmsg"), bson::value(c.message));
      }
      EXPECT_EQ(at(reply, "n"), bson::value(std::int32_t{0}));
      EXPECT_TRUE(events_until_sentinel(stream.get(), coll).empty());
      return;
    }
    EXPECT_FALSE(reply.contains("writeErrors")) << show(reply);
    EXPECT_EQ(at(reply, "n"), bson::value(std::int32_t(c.n))) << show(reply);
    EXPECT_EQ(at(reply, "nModified"), bson::value(std::int32_t(c.modified))) << show(reply);
    if (c.after != nullptr) {
      const auto stored = find_one(coll, c.id);
      ASSERT_TRUE(stored);
      EXPECT_EQ(show(*stored), show(J(c.after)));
    }
    if (c.description == nullptr) return;
    const auto events = events_until_sentinel(stream.get(), coll);
    if (std::string_view(c.description) == "none") {
      EXPECT_TRUE(events.empty()) << show(events.front());
      return;
    }
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(at(events[0], "operationType"), bson::value("update")) << show(events[0]);
    const auto given = J(c.description);
    auto part = [&](const char* name, bson::value fallback) {
      const auto* v = given.get(name);
      return v != nullptr ? *v : fallback;
    };
    const bson::document expected{{"updatedFields", part("updatedFields", bson::document{})},
                                  {"removedFields", part("removedFields", bson::array{})},
                                  {"truncatedArrays", part("truncatedArrays", bson::array{})}};
    EXPECT_EQ(show(at(events[0], "updateDescription").as_document()), show(expected));
  }

  std::unique_ptr<test_client> client_;
  std::string db_;
  int sentinels_ = 0;
};

TEST_F(operators, field_operators) {
  const driver_case cases[] = {
      {.name = "$set creates intermediate documents",
       .documents = R"([{"_id": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a.b": 1}}})",
       .after = R"({"_id": 1, "a": {"b": 1}})",
       .description = R"({"updatedFields": {"a": {"b": 1}}})"},
      {.name = "$set to the current value is a no-op",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a": 1}}})",
       .modified = 0,
       .after = R"({"_id": 1, "a": 1})",
       .description = "none"},
      {.name = "$inc past int32 stores an int64",
       .documents = R"([{"_id": 1, "n": 2147483647}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$inc": {"n": 1}}})",
       .after = R"({"_id": 1, "n": {"$numberLong": "2147483648"}})",
       .description = R"({"updatedFields": {"n": {"$numberLong": "2147483648"}}})"},
      {.name = "$unset reports removedFields",
       .documents = R"([{"_id": 1, "a": 1, "b": {"c": 1}}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$unset": {"a": "", "b.c": ""}}})",
       .after = R"({"_id": 1, "b": {}})",
       .description = R"({"removedFields": ["a", "b.c"]})"},
      {.name = "$unset of a missing field",
       .documents = R"([{"_id": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$unset": {"a": ""}}})",
       .modified = 0,
       .description = "none"},
      {.name = "$rename",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$rename": {"a": "b"}}})",
       .after = R"({"_id": 1, "b": 1})",
       .description = R"({"updatedFields": {"b": 1}, "removedFields": ["a"]})"},
      {.name = "$min and $max across types",
       .documents = R"([{"_id": 1, "lo": 5, "hi": 5}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$min": {"lo": null}, "$max": {"hi": "x"}}})",
       .after = R"({"_id": 1, "lo": null, "hi": "x"})",
       .description = R"({"updatedFields": {"hi": "x", "lo": null}})"},
      {.name = "multi: one document already has the value",
       .documents = R"([{"_id": 1, "s": "a"}, {"_id": 2, "s": "b"}, {"_id": 3, "s": "b"}])",
       .statement = R"({"q": {}, "u": {"$set": {"s": "b"}}, "multi": true})",
       .n = 3,
       .modified = 1,
       .after = R"({"_id": 1, "s": "b"})",
       .description = R"({"updatedFields": {"s": "b"}})"},
  };
  for (const auto& c : cases)
    check(c);
}

TEST_F(operators, array_operators) {
  const driver_case cases[] = {
      {.name = "$push appends: arr.N",
       .documents = R"([{"_id": 1, "r": [1]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$push": {"r": {"$each": [2, 3]}}}})",
       .after = R"({"_id": 1, "r": [1, 2, 3]})",
       .description = R"({"updatedFields": {"r.1": 2, "r.2": 3}})"},
      {.name = "$push onto an empty array: the whole array",
       .documents = R"([{"_id": 1, "r": []}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$push": {"r": 1}}})",
       .after = R"({"_id": 1, "r": [1]})",
       .description = R"({"updatedFields": {"r": [1]}})"},
      {.name = "bounded recent items: $each $sort $slice",
       .documents = R"([{"_id": 1, "recent": [{"t": 5}, {"t": 3}]}])",
       .statement = R"({"q": {"_id": 1, "recent.t": {"$ne": 4}},
                        "u": {"$push": {"recent": {"$each": [{"t": 4}], "$sort": {"t": -1},
                                                   "$slice": 2}}}})",
       .after = R"({"_id": 1, "recent": [{"t": 5}, {"t": 4}]})",
       .description = R"({"updatedFields": {"recent": [{"t": 5}, {"t": 4}]}})"},
      {.name = "$addToSet of a present value",
       .documents = R"([{"_id": 1, "tags": ["a"]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$addToSet": {"tags": "a"}}})",
       .modified = 0,
       .description = "none"},
      {.name = "$pull with a condition",
       .documents = R"([{"_id": 1, "v": [1, 5, 9]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$pull": {"v": {"$gte": 5}}}})",
       .after = R"({"_id": 1, "v": [1]})",
       .description = R"({"updatedFields": {"v": [1]}})"},
      {.name = "arrayFilters: one matching item, concrete path",
       .documents = R"([{"_id": 1, "items": [{"productId": 5, "product": {"title": "x"}},
                                              {"productId": 7, "product": {"title": "y"}}]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"items.$[i].product.title": "z"}},
                        "arrayFilters": [{"i.productId": 7}]})",
       .after = R"({"_id": 1, "items": [{"productId": 5, "product": {"title": "x"}},
                                         {"productId": 7, "product": {"title": "z"}}]})",
       .description = R"({"updatedFields": {"items.1.product.title": "z"}})"},
      {.name = "arrayFilters: several matching items, the whole array",
       .documents = R"([{"_id": 1, "items": [{"p": 7, "t": "a"}, {"p": 7, "t": "b"}, {"p": 1}]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"items.$[i].t": "c"}},
                        "arrayFilters": [{"i.p": 7}]})",
       .after = R"({"_id": 1, "items": [{"p": 7, "t": "c"}, {"p": 7, "t": "c"}, {"p": 1}]})",
       .description = R"({"updatedFields": {"items": [{"p": 7, "t": "c"}, {"p": 7, "t": "c"},
                                                      {"p": 1}]}})"},
      {.name = "positional $ from the query",
       .documents = R"([{"_id": 1, "items": [{"p": 5, "q": 1}, {"p": 7, "q": 1}]}])",
       .statement = R"({"q": {"_id": 1, "items.p": 7}, "u": {"$inc": {"items.$.q": 1}}})",
       .after = R"({"_id": 1, "items": [{"p": 5, "q": 1}, {"p": 7, "q": 2}]})",
       .description = R"({"updatedFields": {"items.1.q": 2}})"},
      {.name = "$[] over every element",
       .documents = R"([{"_id": 1, "v": [1, 2]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$inc": {"v.$[]": 10}}})",
       .after = R"({"_id": 1, "v": [11, 12]})",
       .description = R"({"updatedFields": {"v": [11, 12]}})"},
  };
  for (const auto& c : cases)
    check(c);
}

TEST_F(operators, write_errors_keep_ok_and_the_document) {
  const driver_case cases[] = {
      {.name = "$inc of a string",
       .documents = R"([{"_id": 1, "a": "x"}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$inc": {"a": 1}}})",
       .error = 14,
       .message = "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' "
                  "of non-numeric type string"},
      {.name = "unknown modifier",
       .documents = R"([{"_id": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$foo": {"a": 1}}})",
       .error = 9,
       .message = "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style "
                  "update specified as an array"},
      {.name = "conflicting paths",
       .documents = R"([{"_id": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a": 1}, "$inc": {"a.b": 1}}})",
       .error = 40,
       .message = "Updating the path 'a.b' would create a conflict at 'a'"},
      {.name = "changing _id",
       .documents = R"([{"_id": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"_id": 2}}})",
       .error = 66,
       .message = "Performing an update on the path '_id' would modify the immutable field '_id'"},
      {.name = "array filter missing",
       .documents = R"([{"_id": 1, "a": [1]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a.$[i]": 1}}})",
       .error = 2,
       .message = "No array filter found for identifier 'i' in path 'a.$[i]'"},
      {.name = "array filter unused",
       .documents = R"([{"_id": 1, "a": [1]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a.$[]": 1}},
                        "arrayFilters": [{"i": 1}]})",
       .error = 9},
      {.name = "positional without an array match",
       .documents = R"([{"_id": 1, "a": [1]}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a.$": 2}}})",
       .error = 2,
       .message = "The positional operator did not find the match needed from the query."},
      {.name = "$push onto a scalar",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$push": {"a": 2}}})",
       .error = 2,
       .message = "The field 'a' must be an array but is of type int in document {_id: 1}"},
      {.name = "path through a scalar",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": {"$set": {"a.b": 2}}})",
       .error = 28,
       .message = "Cannot create field 'b' in element {a: 1}"},
  };
  for (const auto& c : cases)
    check(c);
}

TEST_F(operators, upserts_insert_seeded_documents) {
  reset("c", R"([{"_id": 0}])");
  auto stream = watch("c");
  const auto reply = run_ok(J(R"({"update": "c", "updates": [
      {"q": {"_id": 5, "k": "x", "n.m": 1}, "u": {"$set": {"a": 1}, "$setOnInsert": {"b": 2}},
       "upsert": true}]})"));
  EXPECT_EQ(at(reply, "n"), bson::value(std::int32_t{1})) << show(reply);
  EXPECT_EQ(at(reply, "nModified"), bson::value(std::int32_t{0}));
  ASSERT_TRUE(at(reply, "upserted").is_array()) << show(reply);
  const auto& upserted = at(reply, "upserted").as_array().front().as_document();
  EXPECT_EQ(at(upserted, "index"), bson::value(std::int32_t{0}));
  EXPECT_EQ(at(upserted, "_id"), bson::value(std::int32_t{5}));
  const auto stored = find_one("c", bson::value(std::int32_t{5}));
  ASSERT_TRUE(stored);
  EXPECT_EQ(show(*stored), show(J(R"({"_id": 5, "k": "x", "n": {"m": 1}, "a": 1, "b": 2})")));
  const auto events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("insert"));
  EXPECT_EQ(show(at(events[0], "fullDocument").as_document()), show(*stored));

  // A matching upsert updates; $setOnInsert does nothing then.
  const auto again = run_ok(J(R"({"update": "c", "updates": [
      {"q": {"_id": 5}, "u": {"$setOnInsert": {"b": 3}, "$inc": {"a": 1}}, "upsert": true}]})"));
  EXPECT_EQ(at(again, "n"), bson::value(std::int32_t{1}));
  EXPECT_EQ(at(again, "nModified"), bson::value(std::int32_t{1}));
  EXPECT_FALSE(again.contains("upserted"));
  EXPECT_EQ(at(*find_one("c", bson::value(std::int32_t{5})), "b"), bson::value(std::int32_t{2}));

  // Without _id in the query the server makes an ObjectId.
  const auto fresh = run_ok(J(R"({"update": "c", "updates": [
      {"q": {"k": "new"}, "u": {"$push": {"r": 1}}, "upsert": true}]})"));
  const auto& id = at(at(fresh, "upserted").as_array().front().as_document(), "_id");
  EXPECT_TRUE(id.is<bson::oid>()) << show(fresh);
  EXPECT_EQ(show(*find_one("c", id)),
            show(bson::document{{"_id", id}, {"k", "new"}, {"r", bson::array{std::int32_t{1}}}}));
}

TEST_F(operators, replacement_emits_replace) {
  reset("c", R"([{"_id": 1, "a": 1}])");
  auto stream = watch("c");
  const auto reply = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"b": 2}}]})"));
  EXPECT_EQ(at(reply, "nModified"), bson::value(std::int32_t{1})) << show(reply);
  EXPECT_EQ(show(*find_one("c", bson::value(std::int32_t{1}))), show(J(R"({"_id": 1, "b": 2})")));
  const auto events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("replace"));
  EXPECT_EQ(show(at(events[0], "fullDocument").as_document()), show(J(R"({"_id": 1, "b": 2})")));

  const auto bad = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"_id": 2}}]})"));
  const auto& errors = at(bad, "writeErrors");
  ASSERT_TRUE(errors.is_array()) << show(bad);
  EXPECT_EQ(at(errors.as_array().front().as_document(), "code"), bson::value(std::int32_t{66}));
}

TEST_F(operators, find_and_modify) {
  reset("c", R"([{"_id": 1, "items": [{"p": 1, "q": 1}, {"p": 2, "q": 1}]}])");
  auto stream = watch("c");
  auto reply = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 1},
                            "update": {"$inc": {"items.$[i].q": 5}},
                            "arrayFilters": [{"i.p": 2}], "new": true})"));
  EXPECT_EQ(at(reply, "lastErrorObject.n"), bson::value(std::int32_t{1})) << show(reply);
  EXPECT_EQ(at(reply, "lastErrorObject.updatedExisting"), bson::value(true));
  EXPECT_EQ(show(at(reply, "value").as_document()),
            show(J(R"({"_id": 1, "items": [{"p": 1, "q": 1}, {"p": 2, "q": 6}]})")));
  auto events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(show(at(events[0], "updateDescription").as_document()),
            show(J(R"({"updatedFields": {"items.1.q": 6}, "removedFields": [],
                       "truncatedArrays": []})")));

  // Upsert through findAndModify.
  reply = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 9}, "update": {"$set": {"x": 1}},
                       "upsert": true, "new": true})"));
  EXPECT_EQ(at(reply, "lastErrorObject.n"), bson::value(std::int32_t{1})) << show(reply);
  EXPECT_EQ(at(reply, "lastErrorObject.updatedExisting"), bson::value(false));
  EXPECT_EQ(at(reply, "lastErrorObject.upserted"), bson::value(std::int32_t{9}));
  EXPECT_EQ(show(at(reply, "value").as_document()), show(J(R"({"_id": 9, "x": 1})")));

  // An update error fails the command with the update's code.
  auto failed = client_->run(db_, J(R"({"findAndModify": "c", "query": {"_id": 1},
                                       "update": {"$push": {"items.0.p": 1}}})"));
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.code, 2) << failed.message;
}

TEST_F(operators, libmongoc_update_helpers_read_the_counts) {
  reset("c", R"([{"_id": 1, "a": [1, 2, 3]}])");
  auto coll = client_->collection(db_, "c");
  auto selector = bson::to_bson(J(R"({"_id": 1})"));
  auto update = bson::to_bson(J(R"({"$set": {"a.$[x]": 0}})"));
  auto opts = bson::to_bson(J(R"({"arrayFilters": [{"x": {"$gte": 2}}]})"));
  bson_t reply;
  bson_error_t error;
  ASSERT_TRUE(mongoc_collection_update_one(coll.get(), selector.get(), update.get(), opts.get(),
                                           &reply, &error))
      << error.message;
  auto r = bson::from_bson(reply);
  bson_destroy(&reply);
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "matchedCount"), bson::value(std::int32_t{1})) << show(*r);
  EXPECT_EQ(at(*r, "modifiedCount"), bson::value(std::int32_t{1})) << show(*r);
  EXPECT_EQ(show(*find_one("c", bson::value(std::int32_t{1}))),
            show(J(R"({"_id": 1, "a": [1, 0, 0]})")));

  auto upsert_selector = bson::to_bson(J(R"({"_id": 2})"));
  auto upsert_opts = bson::to_bson(J(R"({"upsert": true})"));
  auto set = bson::to_bson(J(R"({"$set": {"b": 1}})"));
  ASSERT_TRUE(mongoc_collection_update_one(coll.get(), upsert_selector.get(), set.get(),
                                           upsert_opts.get(), &reply, &error))
      << error.message;
  r = bson::from_bson(reply);
  bson_destroy(&reply);
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "upsertedCount"), bson::value(std::int32_t{1})) << show(*r);
  EXPECT_EQ(at(*r, "upsertedId"), bson::value(std::int32_t{2})) << show(*r);

  // A write error arrives as a server error with its code.
  auto bad = bson::to_bson(J(R"({"$inc": {"a": 1}})"));
  EXPECT_FALSE(
      mongoc_collection_update_one(coll.get(), selector.get(), bad.get(), nullptr, &reply, &error));
  bson_destroy(&reply);
  EXPECT_EQ(error.domain, static_cast<std::uint32_t>(MONGOC_ERROR_SERVER));
  EXPECT_EQ(error.code, 14U);
}

// Pipeline-style updates: the change event's updateDescription is the diff of the old and new
// documents, as MongoDB computes it for a pipeline update.
TEST_F(operators, pipeline_updates) {
  const driver_case cases[] = {
      {.name = "$set and $unset stages",
       .documents = R"([{"_id": 1, "a": 1, "b": 2, "pad": "padding so that a diff is worth it"}])",
       .statement =
           R"({"q": {"_id": 1}, "u": [{"$set": {"a": 5, "s": {"x": 1}}}, {"$unset": "b"}]})",
       .after = R"({"_id": 1, "a": 5, "pad": "padding so that a diff is worth it", "s": {"x": 1}})",
       .description = R"({"updatedFields": {"a": 5, "s": {"x": 1}}, "removedFields": ["b"]})"},
      {.name = "nested change and a truncated array",
       .documents =
           R"([{"_id": 1, "s": {"x": 1, "y": "a longer sub-document value"}, "arr": [1, 2, 3, 4, 5], "pad": "padding so that a diff is worth it"}])",
       .statement = R"({"q": {"_id": 1}, "u": [{"$set": {"s.x": 7, "arr": [1, 2]}}]})",
       .after =
           R"({"_id": 1, "s": {"x": 7, "y": "a longer sub-document value"}, "arr": [1, 2], "pad": "padding so that a diff is worth it"})",
       .description = R"({"updatedFields": {"s.x": 7},
                          "truncatedArrays": [{"field": "arr", "newSize": 2}]})"},
      {.name = "unchanged document: no event, nModified 0",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": [{"$set": {"a": 1}}]})",
       .modified = 0,
       .after = R"({"_id": 1, "a": 1})",
       .description = "none"},
      {.name = "multi",
       .documents = R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}])",
       .statement = R"({"q": {}, "u": [{"$set": {"a": 2}}], "multi": true})",
       .n = 2,
       .modified = 2,
       .after = R"({"_id": 1, "a": 2})"},
      {.name = "stages other than the update ones are refused",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": [{"$match": {"a": 1}}]})",
       .error = 72,
       .message = "$match is not allowed to be used within an update"},
      {.name = "_id is immutable",
       .documents = R"([{"_id": 1, "a": 1}])",
       .statement = R"({"q": {"_id": 1}, "u": [{"$set": {"_id": 2}}]})",
       .error = 66},
  };
  for (const auto& c : cases)
    check(c);
}

TEST_F(operators, pipeline_update_upserts_and_replace_events) {
  reset("c", R"([{"_id": 1, "a": 1}])");
  auto stream = watch("c");
  // A diff that is not smaller than the new document is logged, and reported, as a replace.
  run_ok(
      J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$replaceWith": {"b": 2}}]}]})"));
  auto events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("replace")) << show(events[0]);
  EXPECT_EQ(show(at(events[0], "fullDocument").as_document()), show(J(R"({"_id": 1, "b": 2})")));

  // Upsert: the query's equality fields, then the pipeline.
  auto reply = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 5, "k": "x"},
                            "u": [{"$set": {"n": {"$literal": 1}}}], "upsert": true}]})"));
  EXPECT_EQ(at(reply, "upserted.0._id"), bson::value(std::int32_t{5})) << show(reply);
  EXPECT_EQ(show(*find_one("c", bson::value(std::int32_t{5}))),
            show(J(R"({"_id": 5, "k": "x", "n": 1})")));

  // arrayFilters make no sense for a pipeline.
  auto bad = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$set": {"a": 1}}],
                          "arrayFilters": [{"x": 1}]}]})"));
  EXPECT_EQ(at(bad, "writeErrors.0.code"), bson::value(std::int32_t{9})) << show(bad);
  // Constants belong to pipeline updates only.
  bad = run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}},
                     "c": {"x": 1}}]})"));
  EXPECT_EQ(at(bad, "writeErrors.0.code"), bson::value(std::int32_t{51198})) << show(bad);
  EXPECT_EQ(at(bad, "writeErrors.0.errmsg"),
            bson::value("Constant values may only be specified for pipeline updates"));
}

TEST_F(operators, pipeline_update_through_find_and_modify_and_bulk) {
  reset("c", R"([{"_id": 1, "a": 1, "pad": "padding so that a diff is worth it"}])");
  auto stream = watch("c");
  auto reply = run_ok(J(R"({"findAndModify": "c", "query": {"_id": 1},
                            "update": [{"$set": {"a": {"$literal": 2}}}], "new": true})"));
  EXPECT_EQ(show(at(reply, "value").as_document()),
            show(J(R"({"_id": 1, "a": 2, "pad": "padding so that a diff is worth it"})")));
  auto events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(show(at(events[0], "updateDescription").as_document()),
            show(J(R"({"updatedFields": {"a": 2}, "removedFields": [], "truncatedArrays": []})")));

  // libmongoc's bulk API sends a pipeline document ({"0": stage, ...}) as an array.
  auto coll = client_->collection(db_, "c");
  mongoc_bulk_operation_t* bulk =
      mongoc_collection_create_bulk_operation_with_opts(coll.get(), nullptr);
  auto selector = bson::to_bson(J(R"({"_id": 1})"));
  auto pipeline = bson::to_bson(J(R"({"0": {"$set": {"a": 3}}})"));
  bson_error_t error;
  ASSERT_TRUE(mongoc_bulk_operation_update_one_with_opts(bulk, selector.get(), pipeline.get(),
                                                         nullptr, &error))
      << error.message;
  bson_t bulk_reply;
  const auto ok = mongoc_bulk_operation_execute(bulk, &bulk_reply, &error);
  auto r = bson::from_bson(bulk_reply);
  bson_destroy(&bulk_reply);
  mongoc_bulk_operation_destroy(bulk);
  ASSERT_TRUE(ok) << error.message;
  ASSERT_TRUE(r);
  EXPECT_EQ(at(*r, "nModified"), bson::value(std::int32_t{1})) << show(*r);
  const auto stored = find_one("c", bson::value(std::int32_t{1}));
  ASSERT_TRUE(stored);
  EXPECT_EQ(show(*stored),
            show(J(R"({"_id": 1, "a": 3, "pad": "padding so that a diff is worth it"})")));
  // The bulk's pipeline update is an update event with the diff, like the other paths'.
  events = events_until_sentinel(stream.get(), "c");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("update")) << show(events[0]);
  EXPECT_EQ(at(events[0], "documentKey"), bson::value(J(R"({"_id": 1})"))) << show(events[0]);
  EXPECT_EQ(show(at(events[0], "updateDescription").as_document()),
            show(J(R"({"updatedFields": {"a": 3}, "removedFields": [], "truncatedArrays": []})")));
}

// An allowed stage's own parse error is the error, with its code and codeName, not 72 "not
// allowed within an update".
TEST_F(operators, pipeline_update_stage_errors_keep_their_codes) {
  reset("c", R"([{"_id": 1, "a": 1}])");
  const struct {
    const char* update;
    int code;
    const char* code_name;
  } cases[] = {
      {R"([{"$set": {"a": {"$frobnicate": 1}}}])", 168, "InvalidPipelineOperator"},
      {R"([{"$set": {"a": "$$v"}}])", 17276, "Location17276"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.update);
    bson::document statement{{"q", J(R"({"_id": 1})")}};
    statement.append("u", A(c.update));
    const auto reply = run_ok(bson::document{{"update", "c"}, {"updates", bson::array{statement}}});
    EXPECT_EQ(at(reply, "writeErrors.0.code"), bson::value(std::int32_t(c.code))) << show(reply);
    bson::document fam{{"findAndModify", "c"}, {"query", J(R"({"_id": 1})")}};
    fam.append("update", A(c.update));
    const auto r = client_->run(db_, fam);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.code, c.code) << r.message;
    EXPECT_EQ(at(r.reply, "codeName"), bson::value(c.code_name)) << show(r.reply);
  }
  EXPECT_EQ(show(*find_one("c", bson::value(std::int32_t{1}))), show(J(R"({"_id": 1, "a": 1})")));
}

}  // namespace
}  // namespace mongo_emulator::engine::conformance
