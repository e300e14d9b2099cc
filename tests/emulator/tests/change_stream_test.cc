// Change streams (reference §2): event types and fields, scopes, fullDocument and pre-images,
// resume tokens, postBatchResumeToken, await-data timing, errors, and libmongoc's resume.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <thread>

#include "bson/hashed_key.h"
#include "emulator_fixture.h"

namespace mongo_emulator::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

bson::value i32(std::int32_t v) {
  return bson::value(v);
}

std::vector<std::string> field_names(const bson::document& d) {
  std::vector<std::string> out;
  for (const auto& f : d)
    out.push_back(f.name);
  return out;
}

class change_streams : public emulator_test {
 protected:
  // Reads events from an open stream (by command) until `n` arrived or a few seconds passed;
  // `last` keeps the last reply (for its cursor id and postBatchResumeToken).
  std::vector<bson::document> collect(bson::document& cursor, std::size_t n) {
    std::vector<bson::document> out;
    const auto take = [&](bson::document& reply) {
      for (const auto& e : batch(reply))
        out.push_back(e.as_document());
      // Keep only what the next getMore needs, so no event is read twice.
      reply = bson::document{
          {"cursor",
           bson::document{{"id", at(reply, "cursor.id")},
                          {"ns", at(reply, "cursor.ns")},
                          {"postBatchResumeToken", at(reply, "cursor.postBatchResumeToken")}}}};
    };
    take(cursor);
    const auto deadline = steady::now() + 5s;
    while (out.size() < n && cursor_id(cursor) != 0 && steady::now() < deadline) {
      auto more = get_more(cursor, 200);
      take(more);
      cursor = std::move(more);
    }
    return out;
  }

  static std::vector<bson::value> tokens(const std::vector<bson::document>& events) {
    std::vector<bson::value> out;
    for (const auto& e : events)
      out.push_back(at(e, "_id"));
    return out;
  }

  static std::string spec_with(std::string_view key, const bson::value& v) {
    bson::document d;
    d.append(std::string(key), v);
    return bson::to_json(d, bson::json_mode::canonical);
  }

  void update(std::string_view coll, std::string_view q, std::string_view u) {
    bson::document cmd;
    cmd.append("update", std::string(coll));
    cmd.append("updates", bson::array{bson::value(bson::document{{"q", J(q)}, {"u", J(u)}})});
    run_ok(cmd);
  }
  void remove(std::string_view coll, std::string_view q) {
    bson::document cmd;
    cmd.append("delete", std::string(coll));
    cmd.append("deletes",
               bson::array{bson::value(bson::document{{"q", J(q)}, {"limit", std::int32_t{0}}})});
    run_ok(cmd);
  }
};

TEST_F(change_streams, document_events_carry_every_field) {
  auto cursor = open_stream("c");
  EXPECT_EQ(at(cursor, "cursor.ns"), bson::value(db() + ".c"));
  EXPECT_NE(cursor_id(cursor), 0);
  insert("c", R"([{"_id": 1, "a": 1}])");
  update("c", R"({"_id": 1})", R"({"$set": {"b": 2}, "$unset": {"a": ""}})");
  update("c", R"({"_id": 1})", R"({"z": 1})");
  remove("c", R"({"_id": 1})");
  const auto events = collect(cursor, 4);
  ASSERT_EQ(events.size(), 4U);

  const auto& ins = events[0];
  EXPECT_EQ(field_names(ins),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "wallTime",
                                      "fullDocument", "ns", "documentKey"}));
  EXPECT_EQ(at(ins, "operationType"), bson::value("insert"));
  EXPECT_TRUE(at(ins, "_id._data").is_string());
  EXPECT_TRUE(at(ins, "clusterTime").is<bson::timestamp>());
  EXPECT_TRUE(at(ins, "wallTime").is<bson::date_time>());
  EXPECT_EQ(at(ins, "fullDocument"), bson::value(J(R"({"_id": 1, "a": 1})")));
  EXPECT_EQ(at(ins, "ns"), bson::value(bson::document{{"db", db()}, {"coll", "c"}}));
  EXPECT_EQ(at(ins, "documentKey"), bson::value(J(R"({"_id": 1})")));

  const auto& upd = events[1];
  EXPECT_EQ(field_names(upd),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "wallTime", "ns",
                                      "documentKey", "updateDescription"}));
  EXPECT_EQ(at(upd, "operationType"), bson::value("update"));
  EXPECT_EQ(at(upd, "updateDescription"),
            bson::value(J(R"({"updatedFields": {"b": 2}, "removedFields": ["a"],
                              "truncatedArrays": []})")));

  const auto& rep = events[2];
  EXPECT_EQ(at(rep, "operationType"), bson::value("replace"));
  EXPECT_EQ(at(rep, "fullDocument"), bson::value(J(R"({"_id": 1, "z": 1})")));
  EXPECT_EQ(at(rep, "documentKey"), bson::value(J(R"({"_id": 1})")));

  const auto& del = events[3];
  EXPECT_EQ(field_names(del), (std::vector<std::string>{"_id", "operationType", "clusterTime",
                                                        "wallTime", "ns", "documentKey"}));
  EXPECT_EQ(at(del, "operationType"), bson::value("delete"));

  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_LT(at(events[i - 1], "clusterTime").as<bson::timestamp>(),
              at(events[i], "clusterTime").as<bson::timestamp>());
    EXPECT_LT(at(events[i - 1], "_id._data").as_string(), at(events[i], "_id._data").as_string());
  }
  EXPECT_EQ(at(cursor, "cursor.postBatchResumeToken"), at(events.back(), "_id"));
}

TEST_F(change_streams, no_op_updates_emit_nothing_and_upserts_emit_inserts) {
  insert("c", R"([{"_id": 1, "a": 1}])");
  auto cursor = open_stream("c");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  run_ok(J(R"({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"a": 2}},
                                            "upsert": true}]})"));
  const auto events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("insert"));
  EXPECT_EQ(at(events[0], "fullDocument"), bson::value(J(R"({"_id": 2, "a": 2})")));
}

TEST_F(change_streams, every_change_gets_a_unique_increasing_cluster_time) {
  auto cursor = open_stream("c");
  bson::array docs;
  for (int i = 0; i < 50; ++i)
    docs.emplace_back(bson::document{{"_id", std::int32_t{i}}});
  bson::document cmd;
  cmd.append("insert", "c");
  cmd.append("documents", std::move(docs));
  run_ok(cmd);
  run_ok(J(R"({"update": "c", "updates": [{"q": {}, "u": {"$inc": {"n": 1}}, "multi": true}]})"));
  const auto events = collect(cursor, 100);
  ASSERT_EQ(events.size(), 100U);
  for (std::size_t i = 1; i < events.size(); ++i)
    ASSERT_LT(at(events[i - 1], "clusterTime").as<bson::timestamp>(),
              at(events[i], "clusterTime").as<bson::timestamp>());
}

TEST_F(change_streams, drop_emits_drop_then_invalidate_and_ends_the_cursor) {
  insert("c", R"([{"_id": 1}])");
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 2}])");
  run_ok(J(R"({"drop": "c"})"));
  const auto events = collect(cursor, 3);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(at(events[1], "operationType"), bson::value("drop"));
  EXPECT_EQ(field_names(events[1]),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "wallTime", "ns"}));
  EXPECT_EQ(at(events[1], "ns"), bson::value(bson::document{{"db", db()}, {"coll", "c"}}));
  EXPECT_EQ(at(events[2], "operationType"), bson::value("invalidate"));
  EXPECT_EQ(field_names(events[2]),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "wallTime"}));
  EXPECT_EQ(at(events[1], "clusterTime"), at(events[2], "clusterTime"));
  EXPECT_LT(at(events[1], "_id._data").as_string(), at(events[2], "_id._data").as_string());
  EXPECT_EQ(cursor_id(cursor), 0);  // the reply carrying the invalidate closes the cursor
}

TEST_F(change_streams, rename_emits_rename_then_invalidate) {
  insert("c", R"([{"_id": 1}])");
  auto cursor = open_stream("c");
  bson::document cmd;
  cmd.append("renameCollection", db() + ".c");
  cmd.append("to", db() + ".d");
  run_ok(cmd, "admin");
  const auto events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("rename"));
  EXPECT_EQ(at(events[0], "ns"), bson::value(bson::document{{"db", db()}, {"coll", "c"}}));
  EXPECT_EQ(at(events[0], "to"), bson::value(bson::document{{"db", db()}, {"coll", "d"}}));
  EXPECT_EQ(at(events[1], "operationType"), bson::value("invalidate"));
  EXPECT_EQ(cursor_id(cursor), 0);
}

TEST_F(change_streams, database_stream_sees_collections_drops_and_drop_database) {
  auto cursor = open_stream("");
  EXPECT_EQ(at(cursor, "cursor.ns"), bson::value(db() + ".$cmd.aggregate"));
  insert("c1", R"([{"_id": 1}])");
  insert("c2", R"([{"_id": 2}])");
  run_ok(J(R"({"drop": "c1"})"));
  run_ok(J(R"({"dropDatabase": 1})"));
  const auto events = collect(cursor, 6);
  std::vector<std::string> types;
  for (const auto& e : events)
    types.push_back(at(e, "operationType").as_string());
  EXPECT_EQ(types, (std::vector<std::string>{"insert", "insert", "drop", "drop", "dropDatabase",
                                             "invalidate"}));
  ASSERT_EQ(events.size(), 6U);
  EXPECT_EQ(at(events[2], "ns.coll"), bson::value("c1"));
  EXPECT_EQ(at(events[3], "ns.coll"), bson::value("c2"));
  EXPECT_EQ(at(events[4], "ns"), bson::value(bson::document{{"db", db()}}));
  EXPECT_EQ(cursor_id(cursor), 0);
}

TEST_F(change_streams, cluster_stream_sees_every_database) {
  auto cursor = open_stream("", R"({"allChangesForCluster": true})", "[]", "admin");
  EXPECT_EQ(at(cursor, "cursor.ns"), bson::value("admin.$cmd.aggregate"));
  const std::string other = db() + "_2";
  insert("c", R"([{"_id": 1}])");
  run_ok(J(R"({"insert": "x", "documents": [{"_id": 2}]})"), other);
  run_ok(J(R"({"dropDatabase": 1})"), other);
  const auto events = collect(cursor, 4);
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(at(events[0], "ns.db"), bson::value(db()));
  EXPECT_EQ(at(events[1], "ns.db"), bson::value(other));
  EXPECT_EQ(at(events[2], "operationType"), bson::value("drop"));
  EXPECT_EQ(at(events[3], "operationType"), bson::value("dropDatabase"));
  EXPECT_NE(cursor_id(cursor), 0);  // no invalidate at cluster scope
  run_fail(J(R"({"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}})"), 73,
           "admin");
  run_fail(J(R"({"aggregate": 1, "pipeline": [{"$changeStream": {"allChangesForCluster": true}}],
                "cursor": {}})"),
           73);
}

TEST_F(change_streams, update_lookup_gives_the_current_document_or_null) {
  insert("c", R"([{"_id": 1}])");
  auto cursor = open_stream("c", R"({"fullDocument": "updateLookup"})");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 2}})");
  auto events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "fullDocument"), bson::value(J(R"({"_id": 1, "a": 2})")));
  EXPECT_EQ(field_names(events[0]).back(), "fullDocument");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 3}})");
  remove("c", R"({"_id": 1})");
  events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_TRUE(at(events[0], "fullDocument").is_null());
  EXPECT_TRUE(events[0].contains("fullDocument"));
}

TEST_F(change_streams, post_images_when_available_and_required) {
  run_ok(J(R"({"create": "plain"})"));
  run_ok(J(R"({"create": "images", "changeStreamPreAndPostImages": {"enabled": true}})"));
  insert("plain", R"([{"_id": 1}])");
  insert("images", R"([{"_id": 1}])");
  auto available = open_stream("plain", R"({"fullDocument": "whenAvailable"})");
  auto required = open_stream("plain", R"({"fullDocument": "required"})");
  auto with_images = open_stream("images", R"({"fullDocument": "required"})");
  update("plain", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  update("images", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  update("images", R"({"_id": 1})", R"({"$set": {"a": 2}})");

  auto events = collect(available, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_TRUE(at(events[0], "fullDocument").is_null());
  EXPECT_TRUE(events[0].contains("fullDocument"));

  const std::string ns = at(required, "cursor.ns").as_string();
  bson::document gm;
  gm.append("getMore", cursor_id(required));
  gm.append("collection", ns.substr(ns.find('.') + 1));
  gm.append("maxTimeMS", std::int32_t{500});
  run_fail(gm, 47);

  events = collect(with_images, 2);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "fullDocument"), bson::value(J(R"({"_id": 1, "a": 1})")));
  EXPECT_EQ(at(events[1], "fullDocument"), bson::value(J(R"({"_id": 1, "a": 2})")));
}

TEST_F(change_streams, pre_images_full_document_before_change) {
  run_ok(J(R"({"create": "c"})"));
  insert("c", R"([{"_id": 1, "v": 0}])");
  auto off = open_stream("c", R"({"fullDocumentBeforeChange": "whenAvailable"})");
  update("c", R"({"_id": 1})", R"({"$set": {"v": 1}})");
  auto events = collect(off, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_TRUE(at(events[0], "fullDocumentBeforeChange").is_null());
  EXPECT_TRUE(events[0].contains("fullDocumentBeforeChange"));

  run_ok(J(R"({"collMod": "c", "changeStreamPreAndPostImages": {"enabled": true}})"));
  auto on = open_stream("c", R"({"fullDocumentBeforeChange": "required"})");
  update("c", R"({"_id": 1})", R"({"$set": {"v": 2}})");
  update("c", R"({"_id": 1})", R"({"w": 1})");
  remove("c", R"({"_id": 1})");
  events = collect(on, 3);
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(at(events[0], "fullDocumentBeforeChange"), bson::value(J(R"({"_id": 1, "v": 1})")));
  EXPECT_EQ(at(events[1], "fullDocumentBeforeChange"), bson::value(J(R"({"_id": 1, "v": 2})")));
  EXPECT_EQ(at(events[2], "fullDocumentBeforeChange"), bson::value(J(R"({"_id": 1, "w": 1})")));
  EXPECT_EQ(at(events[2], "operationType"), bson::value("delete"));
}

TEST_F(change_streams, resuming_from_every_token_yields_exactly_the_later_events) {
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 1}, {"_id": 2}])");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  remove("c", R"({"_id": 2})");
  insert("other", R"([{"_id": 3}])");  // not in this stream
  insert("c", R"([{"_id": 4}])");
  const auto all = collect(cursor, 5);
  ASSERT_EQ(all.size(), 5U);
  const auto all_tokens = tokens(all);
  for (const char* option : {"resumeAfter", "startAfter"}) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      auto resumed = open_stream("c", spec_with(option, all_tokens[i]));
      const auto later = collect(resumed, all.size() - i - 1);
      EXPECT_EQ(tokens(later),
                std::vector<bson::value>(all_tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                         all_tokens.end()))
          << option << " token " << i;
      // Nothing more arrives afterwards.
      EXPECT_TRUE(batch(get_more(resumed, 50)).empty());
    }
  }
}

TEST_F(change_streams, start_at_operation_time_is_inclusive) {
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 1}, {"_id": 2}, {"_id": 3}])");
  const auto all = collect(cursor, 3);
  ASSERT_EQ(all.size(), 3U);
  const auto all_tokens = tokens(all);
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto resumed = open_stream("c", spec_with("startAtOperationTime", at(all[i], "clusterTime")));
    const auto events = collect(resumed, all.size() - i);
    EXPECT_EQ(tokens(events),
              std::vector<bson::value>(all_tokens.begin() + static_cast<std::ptrdiff_t>(i),
                                       all_tokens.end()));
  }
  // The aggregate's operationTime is a start point that excludes earlier changes.
  auto fresh = open_stream("c");
  insert("c", R"([{"_id": 4}])");
  auto from_op_time =
      open_stream("c", spec_with("startAtOperationTime", at(fresh, "operationTime")));
  const auto events = collect(from_op_time, 2);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(at(events[0], "documentKey._id"), i32(4));
}

TEST_F(change_streams, start_after_accepts_an_invalidate_token_resume_after_does_not) {
  insert("c", R"([{"_id": 1}])");
  auto cursor = open_stream("c");
  run_ok(J(R"({"drop": "c"})"));
  const auto events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 2U);
  const auto& invalidate = at(events[1], "_id");
  insert("c", R"([{"_id": 2}])");
  bson::document cmd = J(R"({"aggregate": "c", "cursor": {}})");
  cmd.append("pipeline", bson::array{bson::value(bson::document{
                             {"$changeStream", bson::document{{"resumeAfter", invalidate}}}})});
  const auto r = run_fail(cmd, 260);
  EXPECT_EQ(at(r, "codeName"), bson::value("InvalidResumeToken"));
  auto after = open_stream("c", spec_with("startAfter", invalidate));
  const auto later = collect(after, 1);
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(at(later[0], "documentKey._id"), i32(2));
  // Resuming after the drop (not the invalidate) delivers the invalidate again.
  auto again = open_stream("c", spec_with("resumeAfter", at(events[0], "_id")));
  const auto replay = collect(again, 1);
  ASSERT_EQ(replay.size(), 1U);
  EXPECT_EQ(at(replay[0], "operationType"), bson::value("invalidate"));
}

TEST_F(change_streams, post_batch_resume_token_is_on_every_reply_and_advances_when_idle) {
  auto cursor = open_stream("c");
  const auto first = at(cursor, "cursor.postBatchResumeToken");
  ASSERT_TRUE(first.is_document());
  EXPECT_TRUE(at(first.as_document(), "_data").is_string());
  insert("other", R"([{"_id": 1}])");  // advances the cluster time, invisible here
  const auto idle = get_more(cursor, 50);
  EXPECT_TRUE(batch(idle).empty());
  const auto high_water = at(idle, "cursor.postBatchResumeToken");
  ASSERT_TRUE(high_water.is_document());
  EXPECT_GT(at(high_water.as_document(), "_data").as_string(),
            at(first.as_document(), "_data").as_string());
  insert("c", R"([{"_id": 2}])");
  const auto with_event = get_more(cursor, 500);
  ASSERT_EQ(batch(with_event).size(), 1U);
  EXPECT_EQ(at(with_event, "cursor.postBatchResumeToken"),
            at(batch(with_event)[0].as_document(), "_id"));
  // The high-water token is accepted by resumeAfter and startAfter and resumes after it.
  for (const char* option : {"resumeAfter", "startAfter"}) {
    auto resumed = open_stream("c", spec_with(option, high_water));
    const auto events = collect(resumed, 1);
    ASSERT_EQ(events.size(), 1U) << option;
    EXPECT_EQ(at(events[0], "documentKey._id"), i32(2));
  }
}

TEST_F(change_streams, batch_size_bounds_a_batch_and_the_token_is_its_last_event) {
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}, {"_id": 5}])");
  const std::string ns = at(cursor, "cursor.ns").as_string();
  bson::document gm;
  gm.append("getMore", cursor_id(cursor));
  gm.append("collection", "c");
  gm.append("batchSize", std::int32_t{2});
  const auto r = run_ok(gm);
  ASSERT_EQ(batch(r).size(), 2U);
  EXPECT_EQ(at(r, "cursor.postBatchResumeToken"), at(batch(r)[1].as_document(), "_id"));
  EXPECT_EQ(at(r, "cursor.ns"), bson::value(ns));
  // A first batch carries the events already there, bounded by cursor.batchSize.
  bson::document cmd;
  cmd.append("aggregate", "c");
  cmd.append(
      "pipeline",
      bson::array{bson::value(bson::document{
          {"$changeStream", bson::document{{"startAtOperationTime",
                                            at(batch(r)[0].as_document(), "clusterTime")}}}})});
  cmd.append("cursor", J(R"({"batchSize": 3})"));
  const auto started = run_ok(cmd);
  ASSERT_EQ(batch(started).size(), 3U);
  EXPECT_EQ(at(batch(started)[0].as_document(), "documentKey._id"), i32(1));
  EXPECT_EQ(at(started, "cursor.postBatchResumeToken"), at(batch(started)[2].as_document(), "_id"));
}

TEST_F(change_streams, await_data_get_more_waits_for_max_time_ms) {
  auto cursor = open_stream("c");
  auto start = steady::now();
  auto r = get_more(cursor, 300);
  auto elapsed = steady::now() - start;
  EXPECT_TRUE(batch(r).empty());
  EXPECT_NE(cursor_id(r), 0);
  EXPECT_GE(elapsed, 280ms);
  EXPECT_LT(elapsed, 1500ms);

  // Without maxTimeMS the server waits about a second.
  bson::document gm;
  gm.append("getMore", cursor_id(cursor));
  gm.append("collection", "c");
  start = steady::now();
  run_ok(gm);
  elapsed = steady::now() - start;
  EXPECT_GE(elapsed, 900ms);
  EXPECT_LT(elapsed, 2500ms);
}

TEST_F(change_streams, await_data_get_more_returns_as_soon_as_a_change_arrives) {
  auto cursor = open_stream("c");
  auto writer = std::async(std::launch::async, [this] {
    std::this_thread::sleep_for(200ms);
    auto c = test_client::connect(uri());
    c->command(db(), J(R"({"insert": "c", "documents": [{"_id": 1}]})"));
  });
  const auto start = steady::now();
  const auto r = get_more(cursor, 5000);
  const auto elapsed = steady::now() - start;
  writer.get();
  ASSERT_EQ(batch(r).size(), 1U);
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 2000ms);
}

TEST_F(change_streams, a_waiting_get_more_does_not_block_other_connections) {
  auto cursor = open_stream("c");
  auto waiter = std::async(std::launch::async, [&] {
    auto c = test_client::connect(uri());
    bson::document gm;
    gm.append("getMore", cursor_id(cursor));
    gm.append("collection", "c");
    gm.append("maxTimeMS", std::int32_t{1500});
    return c->run(db(), gm);
  });
  std::this_thread::sleep_for(100ms);
  auto other = test_client::connect(uri());
  ASSERT_TRUE(other);
  for (int i = 0; i < 5; ++i) {
    const auto start = steady::now();
    ASSERT_TRUE(other->command(db(), J(R"({"insert": "x", "documents": [{}]})")));
    ASSERT_TRUE(other->command("admin", J(R"({"ping": 1})")));
    EXPECT_LT(steady::now() - start, 300ms);
  }
  EXPECT_TRUE(waiter.get().ok);
}

TEST_F(change_streams, option_errors) {
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 1}])");
  const auto events = collect(cursor, 1);
  ASSERT_EQ(events.size(), 1U);
  const auto token = at(events[0], "_id");
  const auto stream = [&](bson::document spec, const char* extra = "[]") {
    bson::document cmd;
    cmd.append("aggregate", "c");
    bson::array pipeline{bson::value(bson::document{{"$changeStream", std::move(spec)}})};
    for (auto& s : A(extra))
      pipeline.push_back(s);
    cmd.append("pipeline", std::move(pipeline));
    cmd.append("cursor", bson::document{});
    return cmd;
  };
  run_fail(stream(bson::document{{"resumeAfter", token}, {"startAfter", token}}), 50865);
  run_fail(stream(bson::document{{"resumeAfter", token},
                                 {"startAtOperationTime", at(events[0], "clusterTime")}}),
           40674);
  run_fail(stream(bson::document{{"resumeAfter", J(R"({"_data": "zz"})")}}), 40647);
  run_fail(stream(bson::document{{"resumeAfter", J(R"({"x": 1})")}}), 40647);
  run_fail(stream(bson::document{}, R"([{"$frobnicate": {}}])"), 40324);
  run_fail(stream(bson::document{}, R"([{"$group": {"_id": null}}])"), 20);
  run_fail(stream(bson::document{}, R"([{"$match": {}}, {"$changeStream": {}}])"), 40602);
  run_fail(stream(bson::document{{"fullDocument", "sometimes"}}), 2);
  // A token from another collection's stream names an event this stream never had.
  auto d = open_stream("d");
  insert("d", R"([{"_id": 1}])");
  const auto d_events = collect(d, 1);
  ASSERT_EQ(d_events.size(), 1U);
  run_fail(stream(bson::document{{"resumeAfter", at(d_events[0], "_id")}}), 280);
}

TEST_F(change_streams, match_and_project_after_change_stream) {
  auto matched = open_stream("c", "{}", R"([{"$match": {"operationType": "insert"}}])");
  auto projected = open_stream("c", "{}", R"([{"$project": {"operationType": 1}}])");
  auto no_id = open_stream("c", "{}", R"([{"$project": {"_id": 0}}])");
  insert("c", R"([{"_id": 1}])");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  insert("c", R"([{"_id": 2}])");
  const auto inserts = collect(matched, 3);
  ASSERT_EQ(inserts.size(), 2U);
  EXPECT_EQ(at(inserts[1], "documentKey._id"), i32(2));
  const auto shaped = collect(projected, 3);
  ASSERT_EQ(shaped.size(), 3U);
  EXPECT_EQ(field_names(shaped[0]), (std::vector<std::string>{"_id", "operationType"}));
  const std::string ns = at(no_id, "cursor.ns").as_string();
  bson::document gm;
  gm.append("getMore", cursor_id(no_id));
  gm.append("collection", "c");
  const auto r = run_fail(gm, 280);
  EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["NonResumableChangeStreamError"])")));
}

TEST_F(change_streams, libmongoc_watch_at_every_scope) {
  auto coll_stream = watch("c");
  denormd::test::database_ptr dbh(mongoc_client_get_database(client().get(), db().c_str()));
  auto pipeline = bson::to_bson(J(R"({"pipeline": []})"));
  denormd::test::change_stream_ptr db_stream(
      mongoc_database_watch(dbh.get(), pipeline.get(), nullptr));
  denormd::test::change_stream_ptr cluster_stream(
      mongoc_client_watch(client().get(), pipeline.get(), nullptr));
  insert("c", R"([{"_id": 1}])");
  for (auto* s : {coll_stream.get(), db_stream.get(), cluster_stream.get()}) {
    const auto events = denormd::test::next_events(s, 1, 5s);
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(at(events[0], "documentKey._id"), i32(1));
  }
}

// libmongoc's resume after a network error on getMore: failCommand closes the connection,
// the driver re-aggregates from its cached token, and no event is lost or repeated.
TEST_F(change_streams, libmongoc_resumes_after_close_connection_without_loss_or_repeat) {
  auto stream = watch("c", "[]", R"({"maxAwaitTimeMS": 100})");
  int next_id = 0;
  std::vector<bson::value> seen;
  for (int round = 0; round < 3; ++round) {
    bson::array docs;
    for (int i = 0; i < 3; ++i)
      docs.emplace_back(bson::document{{"_id", std::int32_t{next_id++}}});
    bson::document cmd;
    cmd.append("insert", "c");
    cmd.append("documents", std::move(docs));
    run_ok(cmd);
    for (const auto& e : denormd::test::next_events(stream.get(), 3, 5s))
      seen.push_back(at(e, "documentKey._id"));
    run_ok(J(R"({"configureFailPoint": "failCommand", "mode": {"times": 1},
                 "data": {"failCommands": ["getMore"], "closeConnection": true}})"),
           "admin");
  }
  bson::array expected;
  for (int i = 0; i < next_id; ++i)
    expected.emplace_back(std::int32_t{i});
  EXPECT_EQ(bson::value(bson::array(seen.begin(), seen.end())), bson::value(expected));
  const bson_t* err_doc = nullptr;
  bson_error_t error;
  EXPECT_FALSE(mongoc_change_stream_error_document(stream.get(), &error, &err_doc))
      << error.message;
}

// MongoDB 4.4+ labels a resumable getMore error only once the cursor is checked out, which is
// what failGetMoreAfterCursorCheckout simulates; the driver resumes on the label.
TEST_F(change_streams, libmongoc_resumes_after_a_server_labelled_get_more_error) {
  auto stream = watch("c", "[]", R"({"maxAwaitTimeMS": 100})");
  insert("c", R"([{"_id": 1}])");
  ASSERT_EQ(denormd::test::next_events(stream.get(), 1, 5s).size(), 1U);
  run_ok(J(R"({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 1},
               "data": {"errorCode": 6}})"),
         "admin");
  insert("c", R"([{"_id": 2}, {"_id": 3}])");
  const auto events = denormd::test::next_events(stream.get(), 2, 5s);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "documentKey._id"), i32(2));
  EXPECT_EQ(at(events[1], "documentKey._id"), i32(3));
}

// failCommand acts before the cursor is checked out: no label, so the driver raises (the
// change streams specification's "does not resume if error does not contain
// ResumableChangeStreamError").
TEST_F(change_streams, libmongoc_raises_an_unlabelled_fail_command_get_more_error) {
  auto stream = watch("c", "[]", R"({"maxAwaitTimeMS": 100})");
  insert("c", R"([{"_id": 1}])");
  ASSERT_EQ(denormd::test::next_events(stream.get(), 1, 5s).size(), 1U);
  run_ok(J(R"({"configureFailPoint": "failCommand", "mode": {"times": 1},
               "data": {"failCommands": ["getMore"], "errorCode": 6}})"),
         "admin");
  insert("c", R"([{"_id": 2}])");
  EXPECT_TRUE(denormd::test::next_events(stream.get(), 1, 2s).empty());
  bson_error_t error;
  const bson_t* reply = nullptr;
  ASSERT_TRUE(mongoc_change_stream_error_document(stream.get(), &error, &reply));
  EXPECT_EQ(error.code, 6U) << error.message;
}

TEST_F(change_streams, get_more_error_labels_are_mongodbs) {
  auto cursor = open_stream("c");
  const auto get_more_cmd = [&](const bson::document& reply) {
    bson::document gm;
    gm.append("getMore", cursor_id(reply));
    gm.append("collection", "c");
    gm.append("maxTimeMS", std::int32_t{50});
    return gm;
  };
  const auto fail_command = [&](std::string_view data) {
    bson::document cmd = J(R"({"configureFailPoint": "failCommand", "mode": {"times": 1}})");
    cmd.append("data", J(data));
    run_ok(cmd, "admin");
  };
  fail_command(R"({"failCommands": ["getMore"], "errorCode": 6})");
  auto r = run_fail(get_more_cmd(cursor), 6);
  EXPECT_FALSE(r.contains("errorLabels"));
  fail_command(R"({"failCommands": ["getMore"], "errorCode": 6,
                   "errorLabels": ["ResumableChangeStreamError"]})");
  r = run_fail(get_more_cmd(cursor), 6);
  EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["ResumableChangeStreamError"])")));
  fail_command(R"({"failCommands": ["getMore"], "errorCode": 280})");
  r = run_fail(get_more_cmd(cursor), 280);
  EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["NonResumableChangeStreamError"])")));
  // The cursor survived the errors injected before checkout.
  insert("c", R"([{"_id": 1}])");
  EXPECT_EQ(batch(run_ok(get_more_cmd(cursor))).size(), 1U);

  // After checkout the server labels the error as it would a real one, and the cursor dies.
  run_ok(J(R"({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 1},
               "data": {"errorCode": 6}})"),
         "admin");
  r = run_fail(get_more_cmd(cursor), 6);
  EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["ResumableChangeStreamError"])")));
  run_fail(get_more_cmd(cursor), 43);
  cursor = open_stream("c");
  run_ok(J(R"({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 1},
               "data": {"errorCode": 2}})"),
         "admin");
  r = run_fail(get_more_cmd(cursor), 2);
  EXPECT_FALSE(r.contains("errorLabels"));
  run_ok(J(R"({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": "off"})"), "admin");
}

// ErrorLabelBuilder::isResumableChangeStreamError (src/mongo/db/error_labels.cpp, 4.4+):
// retriable, network and retargeting errors, RetryChangeStream and
// FailedToSatisfyReadPreference get the label; CursorNotFound (43), resumable only for drivers
// of servers older than 4.4, does not.
TEST_F(change_streams, server_labels_follow_mongodbs_label_builder) {
  const struct {
    int code;
    bool resumable;
  } cases[] = {{43, false},  {6, true},      {89, true},    {91, true},    {133, true},
               {134, true},  {150, true},    {189, true},   {234, true},   {262, true},
               {9001, true}, {10107, true},  {11602, true}, {13388, true}, {13436, true},
               {50, false},  {11601, false}, {2, false},    {96, false},   {237, false}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    const auto cursor = open_stream("c");
    bson::document fail_point =
        J(R"({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 1}})");
    fail_point.append("data", bson::document{{"errorCode", std::int32_t{c.code}}});
    run_ok(fail_point, "admin");
    bson::document gm;
    gm.append("getMore", cursor_id(cursor));
    gm.append("collection", "c");
    gm.append("maxTimeMS", std::int32_t{50});
    const auto r = run_fail(gm, c.code);
    if (c.resumable) {
      EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["ResumableChangeStreamError"])")));
    } else {
      EXPECT_FALSE(r.contains("errorLabels")) << bson::to_json(r);
    }
  }
}

// A token is found by scanning history through the stream's leading $match, so a new filter
// that drops the token's own event makes it unusable (resume from its clusterTime instead).
TEST_F(change_streams, a_token_whose_event_the_new_match_drops_is_not_found) {
  auto cursor = open_stream("c");
  insert("c", R"([{"_id": 1}])");
  update("c", R"({"_id": 1})", R"({"$set": {"a": 1}})");
  const auto events = collect(cursor, 2);
  ASSERT_EQ(events.size(), 2U);
  const auto& insert_token = at(events[0], "_id");
  const auto stream = [&](std::string_view key, const bson::value& v, std::string_view stages) {
    bson::document cmd;
    cmd.append("aggregate", "c");
    bson::array pipeline = A(stages);
    pipeline.insert(pipeline.begin(),
                    bson::value(bson::document{{"$changeStream", J(spec_with(key, v))}}));
    cmd.append("pipeline", std::move(pipeline));
    cmd.append("cursor", bson::document{});
    return cmd;
  };
  const auto r = run_fail(
      stream("resumeAfter", insert_token, R"([{"$match": {"operationType": "update"}}])"), 280);
  EXPECT_EQ(at(r, "errorLabels"), bson::value(A(R"(["NonResumableChangeStreamError"])")));
  // The same filter from the token's clusterTime works, and a filter that keeps it resumes.
  auto from_time = run_ok(stream("startAtOperationTime", at(events[0], "clusterTime"),
                                 R"([{"$match": {"operationType": "update"}}])"));
  const auto updates = collect(from_time, 1);
  ASSERT_EQ(updates.size(), 1U);
  EXPECT_EQ(at(updates[0], "operationType").as_string(), "update");
  auto kept = run_ok(stream("resumeAfter", insert_token,
                            R"([{"$match": {"operationType": {"$in": ["insert", "update"]}}}])"));
  const auto after = collect(kept, 1);
  ASSERT_EQ(after.size(), 1U);
  EXPECT_EQ(at(after[0], "operationType").as_string(), "update");
}

// Emulator-only: a small history bound makes old tokens unusable (286).
TEST(change_streams_history, resuming_before_the_kept_history_fails_with_286) {
  if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs --oplog-max-events";
  auto server = denormd::test::emulator_process::start({"--oplog-max-events", "5"});
  ASSERT_TRUE(server) << server.error().message;
  auto c = test_client::connect(server->uri());
  ASSERT_TRUE(c);
  auto open = c->command("h", J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                    "cursor": {}})"));
  ASSERT_TRUE(open);
  ASSERT_TRUE(c->command("h", J(R"({"insert": "c", "documents": [{"_id": 0}]})")));
  bson::document gm;
  gm.append("getMore", at(*open, "cursor.id"));
  gm.append("collection", "c");
  gm.append("maxTimeMS", std::int32_t{500});
  auto first = c->command("h", gm);
  ASSERT_TRUE(first);
  ASSERT_EQ(at(*first, "cursor.nextBatch").as_array().size(), 1U);
  const auto old_event = at(*first, "cursor.nextBatch").as_array()[0].as_document();
  for (int i = 1; i <= 10; ++i) {
    bson::document ins;
    ins.append("insert", "c");
    ins.append("documents", bson::array{bson::value(bson::document{{"_id", std::int32_t{i}}})});
    ASSERT_TRUE(c->command("h", ins));
  }
  const auto expect_286 = [&](bson::document spec) {
    bson::document cmd;
    cmd.append("aggregate", "c");
    cmd.append("pipeline",
               bson::array{bson::value(bson::document{{"$changeStream", std::move(spec)}})});
    cmd.append("cursor", bson::document{});
    auto r = c->run("h", cmd);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.code, 286);
    EXPECT_EQ(at(r.reply, "errmsg"),
              bson::value("Resume of change stream was not possible, as the resume point may no "
                          "longer be in the oplog."));
    EXPECT_EQ(at(r.reply, "errorLabels"), bson::value(A(R"(["NonResumableChangeStreamError"])")));
  };
  expect_286(bson::document{{"resumeAfter", at(old_event, "_id")}});
  expect_286(bson::document{{"startAfter", at(old_event, "_id")}});
  expect_286(bson::document{{"startAtOperationTime", at(old_event, "clusterTime")}});
  // The open cursor fell behind the kept history as well.
  auto behind = c->run("h", gm);
  EXPECT_EQ(behind.code, 286);
  EXPECT_EQ(at(behind.reply, "errorLabels"),
            bson::value(A(R"(["NonResumableChangeStreamError"])")));
  // Recent tokens still work.
  auto recent = c->command("h", J(R"({"aggregate": "c", "pipeline": [{"$changeStream": {}}],
                                      "cursor": {}})"));
  EXPECT_TRUE(recent);
  EXPECT_EQ(server->stop(), 0);
}

// showExpandedEvents (MongoDB 6.0): DDL events with collectionUUID and operationDescription,
// in the field order of MongoDB's change stream transform; without it, none of them.
TEST_F(change_streams, expanded_events_show_ddl_with_collection_uuid) {
  auto expanded = open_stream("c", R"({"showExpandedEvents": true})");
  auto plain = open_stream("c");
  insert("c", R"([{"_id": 1}])");  // creates the collection implicitly
  run_ok(J(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"},
                                                 {"key": {"b": -1}, "name": "b_-1"}]})"));
  run_ok(J(R"({"collMod": "c", "changeStreamPreAndPostImages": {"enabled": true}})"));
  run_ok(J(R"({"collMod": "c", "index": {"keyPattern": {"b": -1}, "hidden": true}})"));
  run_ok(J(R"({"dropIndexes": "c", "index": "a_1"})"));
  run_ok(J(R"({"renameCollection": ")" + db() + R"(.c", "to": ")" + db() + R"(.d"})"), "admin");
  auto events = collect(expanded, 8);
  ASSERT_EQ(events.size(), 8U);
  // Hiding an index: what changed, and its old `hidden` in stateBeforeChange.indexOptions.
  EXPECT_EQ(at(events[4], "operationType"), bson::value("modify"));
  EXPECT_EQ(at(events[4], "operationDescription"),
            bson::value(J(R"({"index": {"keyPattern": {"b": -1}, "hidden": true}})")));
  EXPECT_EQ(at(events[4], "stateBeforeChange.indexOptions"),
            bson::value(J(R"({"hidden": false})")));
  events.erase(events.begin() + 4);
  std::vector<std::string> types;
  for (const auto& e : events)
    types.push_back(at(e, "operationType").as_string());
  EXPECT_EQ(types, (std::vector<std::string>{"create", "insert", "createIndexes", "modify",
                                             "dropIndexes", "rename", "invalidate"}));
  const bson::value uuid = at(events[0], "collectionUUID");
  ASSERT_TRUE(uuid.is<bson::binary>());
  EXPECT_EQ(uuid.as<bson::binary>().subtype, 4);
  EXPECT_EQ(field_names(events[0]),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "collectionUUID",
                                      "wallTime", "ns", "operationDescription"}));
  EXPECT_EQ(at(events[0], "operationDescription"),
            bson::value(J(R"({"idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}})")));
  // Every event of the collection names it, CRUD events too.
  for (std::size_t i = 0; i + 1 < events.size(); ++i)
    EXPECT_EQ(at(events[i], "collectionUUID"), uuid) << i;
  EXPECT_FALSE(events[6].contains("collectionUUID"));
  EXPECT_EQ(field_names(events[1]),
            (std::vector<std::string>{"_id", "operationType", "clusterTime", "collectionUUID",
                                      "wallTime", "fullDocument", "ns", "documentKey"}));
  // A non-empty collection commits its index builds in one entry: one event for both.
  EXPECT_EQ(at(events[2], "operationDescription"),
            bson::value(J(R"({"indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"},
                                          {"v": 2, "key": {"b": -1}, "name": "b_-1"}]})")));
  EXPECT_EQ(at(events[3], "operationDescription"),
            bson::value(J(R"({"changeStreamPreAndPostImages": {"enabled": true}})")));
  EXPECT_EQ(at(events[3], "stateBeforeChange.collectionOptions.uuid"), uuid);
  EXPECT_EQ(at(events[4], "operationDescription"),
            bson::value(J(R"({"indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"}]})")));
  EXPECT_EQ(at(events[5], "operationDescription.to"),
            bson::value(bson::document{{"db", db()}, {"coll", "d"}}));

  // The same changes without showExpandedEvents: only what MongoDB shows by default.
  const auto seen = collect(plain, 3);
  ASSERT_EQ(seen.size(), 3U);
  EXPECT_EQ(at(seen[0], "operationType"), bson::value("insert"));
  EXPECT_FALSE(seen[0].contains("collectionUUID"));
  EXPECT_EQ(at(seen[1], "operationType"), bson::value("rename"));
  EXPECT_FALSE(seen[1].contains("operationDescription"));
  EXPECT_EQ(at(seen[2], "operationType"), bson::value("invalidate"));
}

TEST_F(change_streams, expanded_events_of_an_explicit_create_and_an_empty_collections_indexes) {
  auto stream = open_stream("", R"({"showExpandedEvents": true})");  // the whole database
  run_ok(J(R"({"create": "e", "changeStreamPreAndPostImages": {"enabled": true}})"));
  run_ok(J(R"({"createIndexes": "e", "indexes": [{"key": {"a": 1}, "name": "a_1"},
                                                 {"key": {"b": 1}, "name": "b_1"}]})"));
  run_ok(J(R"({"drop": "e"})"));
  const auto events = collect(stream, 4);
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("create"));
  EXPECT_EQ(at(events[0], "operationDescription"),
            bson::value(J(R"({"changeStreamPreAndPostImages": {"enabled": true},
                              "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}})")));
  // An empty collection logs one createIndexes per index.
  EXPECT_EQ(at(events[1], "operationDescription"),
            bson::value(J(R"({"indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"}]})")));
  EXPECT_EQ(at(events[2], "operationDescription"),
            bson::value(J(R"({"indexes": [{"v": 2, "key": {"b": 1}, "name": "b_1"}]})")));
  EXPECT_EQ(at(events[3], "operationType"), bson::value("drop"));
  EXPECT_EQ(at(events[3], "collectionUUID"), at(events[0], "collectionUUID"));
  EXPECT_FALSE(events[3].contains("operationDescription"));
  run_fail(J(R"({"aggregate": 1, "pipeline": [{"$changeStream": {"showExpandedEvents": 1}}],
                 "cursor": {}})"),
           14);
}

TEST_F(change_streams, an_expanded_rename_over_a_target_names_the_dropped_collection) {
  insert("src", R"([{"_id": 1}])");
  insert("dst", R"([{"_id": 2}])");
  auto listed = run_ok(J(R"({"listCollections": 1, "filter": {"name": "dst"}})"));
  const bson::value target_uuid = at(batch(listed)[0].as_document(), "info.uuid");
  auto stream = open_stream("src", R"({"showExpandedEvents": true})");
  run_ok(J(R"({"renameCollection": ")" + db() + R"(.src", "to": ")" + db() +
           R"(.dst", "dropTarget": true})"),
         "admin");
  const auto events = collect(stream, 2);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(at(events[0], "operationType"), bson::value("rename"));
  bson::document expected{{"to", bson::document{{"db", db()}, {"coll", "dst"}}},
                          {"dropTarget", target_uuid}};
  EXPECT_EQ(at(events[0], "operationDescription"), bson::value(expected));
}

// Splitting one collection's stream into partitions by hashed key (what denormd will do): four
// streams, each matching {$mod: [{$abs: {$toHashedIndexKey: "$documentKey._id"}}, 4]} == k,
// see each insert exactly once between them, in the partition bson::hashed_partition gives.
TEST_F(change_streams, hashed_partitions_deliver_each_insert_to_exactly_one_stream) {
  std::vector<change_stream_ptr> streams;
  for (int k = 0; k < 4; ++k) {
    streams.push_back(watch("c",
                            R"([{"$match": {"$expr": {"$eq": [{"$mod": [{"$abs": )"
                            R"({"$toHashedIndexKey": "$documentKey._id"}}, 4]}, )" +
                                std::to_string(k) + "]}}}]",
                            R"({"maxAwaitTimeMS": 100})"));
  }
  bson::array docs;
  for (std::int32_t i = 0; i < 30; ++i) {
    bson::oid id;
    id.bytes[11] = static_cast<std::uint8_t>(i);
    for (bson::value key :
         {bson::value(i), bson::value("host-" + std::to_string(i)), bson::value(id),
          bson::value(bson::document{{"shard", i}, {"at", i * 1.5}})})
      docs.emplace_back(bson::document{{"_id", std::move(key)}});
  }
  bson::document cmd;
  cmd.append("insert", "c");
  cmd.append("documents", docs);
  run_ok(cmd);

  std::vector<std::size_t> expected(4);
  for (const auto& d : docs)
    ++expected[bson::hashed_partition(bson::hashed_index_key(at(d.as_document(), "_id")), 4)];
  std::vector<bson::value> seen;
  for (std::int32_t k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    EXPECT_GT(expected[k], 0U);
    const auto events = denormd::test::next_events(streams[k].get(), expected[k], 5s);
    ASSERT_EQ(events.size(), expected[k]);
    for (const auto& e : events) {
      const bson::value& id = at(e, "documentKey._id");
      EXPECT_EQ(bson::hashed_partition(bson::hashed_index_key(id), 4), k) << bson::to_json(id);
      seen.push_back(id);
    }
    EXPECT_TRUE(denormd::test::next_events(streams[k].get(), 1, 300ms).empty());
  }
  bson::array ids;
  for (const auto& d : docs)
    ids.push_back(at(d.as_document(), "_id"));
  std::sort(seen.begin(), seen.end(), bson::value_less{});
  std::sort(ids.begin(), ids.end(), bson::value_less{});
  EXPECT_EQ(bson::value(bson::array(seen.begin(), seen.end())), bson::value(ids));
}

// The form denormd should use, {$abs: {$mod: [<hash>, N]}}: $mod keeps the dividend's sign, so
// the remainder is in (-N, N) and $abs cannot overflow. With $abs first, the one hash INT64_MIN
// fails the getMore (28680) and stops the stream for good, as every resume meets the same event.
// No key is known to hash to INT64_MIN, so a stored field stands in for the hash there.
TEST_F(change_streams, mod_then_abs_partitions_survive_the_int64_min_hash) {
  const char* opts = R"({"maxAwaitTimeMS": 100})";
  auto safe = watch(
      "c", R"([{"$match": {"$expr": {"$eq": [{"$abs": {"$mod": ["$fullDocument.h", 4]}}, 0]}}}])",
      opts);
  auto unsafe = watch(
      "c", R"([{"$match": {"$expr": {"$eq": [{"$mod": [{"$abs": "$fullDocument.h"}, 4]}, 0]}}}])",
      opts);
  const std::int32_t k = bson::hashed_partition(bson::hashed_index_key(bson::value("web-7")), 4);
  auto by_host = watch("c",
                       R"([{"$match": {"$expr": {"$eq": [{"$abs": {"$mod": [)"
                       R"({"$toHashedIndexKey": "$fullDocument.host"}, 4]}}, )" +
                           std::to_string(k) + "]}}}]",
                       opts);
  bson::array docs;
  docs.emplace_back(bson::document{{"_id", 1}, {"h", std::numeric_limits<std::int64_t>::min()}});
  docs.emplace_back(bson::document{{"_id", 2}, {"h", std::int64_t{-8}}});
  for (std::int32_t i = 0; i < 20; ++i)
    docs.emplace_back(bson::document{{"_id", 10 + i}, {"host", "web-" + std::to_string(i)}});
  bson::document cmd;
  cmd.append("insert", "c");
  cmd.append("documents", docs);
  run_ok(cmd);

  const auto zero = denormd::test::next_events(safe.get(), 2, 5s);
  ASSERT_EQ(zero.size(), 2U);
  EXPECT_EQ(at(zero[0], "documentKey._id"), i32(1));
  EXPECT_EQ(at(zero[1], "documentKey._id"), i32(2));

  EXPECT_TRUE(denormd::test::next_events(unsafe.get(), 1, 2s).empty());
  bson_error_t error;
  const bson_t* reply = nullptr;
  ASSERT_TRUE(mongoc_change_stream_error_document(unsafe.get(), &error, &reply));
  EXPECT_EQ(error.code, 28680U) << error.message;

  // A document without `host` hashes as null, as MongoDB hashes a missing value.
  std::vector<std::int32_t> want;
  for (const auto& d : docs) {
    const bson::value& host = at(d.as_document(), "host");
    if (bson::hashed_partition(bson::hashed_index_key(host), 4) == k)
      want.push_back(at(d.as_document(), "_id").as<std::int32_t>());
  }
  const auto hosts = denormd::test::next_events(by_host.get(), want.size(), 5s);
  std::vector<std::int32_t> got;
  for (const auto& e : hosts)
    got.push_back(at(e, "documentKey._id").as<std::int32_t>());
  EXPECT_EQ(got, want);
  EXPECT_TRUE(denormd::test::next_events(by_host.get(), 1, 300ms).empty());
}
}  // namespace
}  // namespace mongo_emulator::test
