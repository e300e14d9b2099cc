// The stored checkpoint document: what a save writes and what a load reads back, through a
// client that keeps the collection in memory.
#include "checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "bson/json.h"
#include "emulator_process.h"
#include "mongo/connection.h"

namespace denormd::checkpoint {
namespace {

bson::document parse(const std::string& json) {
  auto doc = bson::parse_json(json);
  EXPECT_TRUE(doc.has_value()) << json;
  return doc ? std::move(doc).value() : bson::document{};
}

// The document an upsert with `update` makes of an empty one ($set, and $unset, which removes
// nothing from an empty one).
bson::document stored(const bson::document& update) {
  const bson::value* set = update.get("$set");
  EXPECT_TRUE(set != nullptr && set->is_document()) << bson::to_json(update);
  EXPECT_EQ(update.size(), update.contains("$unset") ? 2U : 1U) << bson::to_json(update);
  return set != nullptr && set->is_document() ? set->as_document() : bson::document{};
}

TEST(checkpoint_store_test, the_event_time_and_filter_are_kept_or_removed_with_each_token) {
  const checkpoint cp{parse(R"({"_data":"8263"})"), 0, 0, bson::timestamp{42, 7},
                      R"({"f":[{"$match":{}}]})"};
  const bson::document update = save_update(cp, 1);
  EXPECT_FALSE(update.contains("$unset")) << bson::to_json(update);
  auto back = parse_checkpoint(stored(update));
  ASSERT_TRUE(back.has_value());
  ASSERT_TRUE(back->event_time.has_value());
  EXPECT_EQ(back->event_time->t, 42u);
  EXPECT_EQ(back->event_time->i, 7u);
  EXPECT_EQ(back->filter, cp.filter);
  // A high-water mark names no event: the time stored beside an earlier token goes.
  const checkpoint idle{parse(R"({"_data":"8264"})"), 0, 0, std::nullopt, ""};
  const bson::document again = save_update(idle, 2);
  EXPECT_EQ(bson::to_json(*again.get("$unset")), R"({"clusterTime":"","filter":""})");
  EXPECT_FALSE(stored(again).contains("clusterTime"));
}

TEST(checkpoint_store_test, a_save_stores_token_event_time_and_save_time) {
  const checkpoint cp{parse(R"({"_data":"8263"})"), 1'700'000'000'000, 0, std::nullopt, ""};
  const auto doc = stored(save_update(cp, 1'700'000'005'000));
  EXPECT_EQ(bson::to_json(doc), bson::to_json(parse(R"({"token":{"_data":"8263"},
      "savedAt":{"$date":{"$numberLong":"1700000005000"}},
      "wallTime":{"$date":{"$numberLong":"1700000000000"}}})")));
  auto back = parse_checkpoint(doc);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->token, cp.token);
  EXPECT_EQ(back->event_ms, cp.event_ms);
  EXPECT_EQ(back->saved_ms, 1'700'000'005'000);
}

TEST(checkpoint_store_test, a_save_without_an_event_time_keeps_the_stored_one) {
  // Idle since the start: the stored last-event time must not become 1970-01-01.
  const checkpoint cp{parse(R"({"_data":"8264"})"), 0, 0, std::nullopt, ""};
  const auto doc = stored(save_update(cp, 1'700'000'009'000));
  EXPECT_FALSE(doc.contains("wallTime")) << bson::to_json(doc);
  EXPECT_TRUE(doc.contains("token"));
  EXPECT_TRUE(doc.contains("savedAt"));
}

TEST(checkpoint_store_test, a_given_save_time_is_kept) {
  const checkpoint cp{parse(R"({"_data":"8265"})"), 5, 7, std::nullopt, ""};
  auto back = parse_checkpoint(stored(save_update(cp, 99)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->saved_ms, 7);
}

TEST(checkpoint_store_test, a_document_without_a_token_is_no_checkpoint) {
  // A document whose token was removed: the rest of it stays.
  EXPECT_FALSE(parse_checkpoint(parse(R"({"_id":"shop.customers",
      "wallTime":{"$date":{"$numberLong":"5"}}})")));
  EXPECT_FALSE(parse_checkpoint(parse(R"({"_id":"shop.customers","token":"x"})")));
  auto bare = parse_checkpoint(parse(R"({"token":{"_data":"1"}})"));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->event_ms, 0);
  EXPECT_EQ(bare->saved_ms, 0);
}

// A client holding one collection in memory: an upsert by _id applies $set and $unset; finds by
// _id.
class memory_client final : public mongo::document_client {
 public:
  std::map<std::string, bson::document> docs;  // by _id
  std::string last_ns;
  bool upserted = false;
  std::optional<mongo::driver_error> fail;

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                                 std::span<const mongo::write_request> requests,
                                                 bool) override {
    last_ns = db + "." + coll;
    if (fail) return mongo::failure(*fail);
    mongo::bulk_outcome out;
    for (const auto& r : requests) {
      const std::string id = r.filter->get("_id")->as_string();
      upserted = r.upsert;
      // A fenced save: {$or: [{leaseEpoch: {$lte: e}}, {leaseEpoch: {$exists: false}}]}. An
      // upsert that does not match an existing _id fails on the duplicate key, as MongoDB's.
      if (const bson::value* any = r.filter->get("$or"); any != nullptr && docs.contains(id)) {
        const auto& lte = any->as_array()[0].as_document().get("leaseEpoch")->as_document();
        const bson::value* stored_epoch = docs[id].get("leaseEpoch");
        if (stored_epoch != nullptr && stored_epoch->to_double() > lte.get("$lte")->to_double()) {
          out.failed_index = 0;
          out.write_error = mongo::driver_error{
              mongo::driver_error::origin::server, 11000, "E11000 duplicate key error", {}};
          return out;
        }
      }
      bson::document& d = docs[id];
      if (!d.contains("_id")) d.append("_id", id);
      for (const auto& f : r.update->get("$set")->as_document())
        d.set(f.name, f.val);
      if (const bson::value* unset = r.update->get("$unset"); unset != nullptr) {
        bson::document kept;
        for (const auto& f : d) {
          if (!unset->as_document().contains(f.name)) kept.append(f.name, f.val);
        }
        d = std::move(kept);
      }
      ++out.matched;
    }
    return out;
  }
  mongo::status insert_one(const std::string&, const std::string&, const bson::document&) override {
    ADD_FAILURE() << "a checkpoint is never inserted";
    return {};
  }
  mongo::status find_each(const std::string&, const std::string&, const bson::document&,
                          const mongo::find_options&,
                          const std::function<bool(bson::document&&)>&) override {
    ADD_FAILURE() << "a checkpoint is read by _id";
    return {};
  }
  mongo::result<std::vector<bson::document>> find(const std::string&, const std::string&,
                                                  const bson::document&,
                                                  const mongo::find_options&) override {
    ADD_FAILURE() << "a checkpoint is read by _id";
    return std::vector<bson::document>{};
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string& db,
                                                        const std::string& coll,
                                                        const bson::document& filter) override {
    last_ns = db + "." + coll;
    if (fail) return mongo::failure(*fail);
    auto it = docs.find(filter.get("_id")->as_string());
    if (it == docs.end()) return std::optional<bson::document>{};
    return std::optional<bson::document>(it->second);
  }
  mongo::result<std::vector<bson::document>> aggregate(const std::string&, const std::string&,
                                                       const bson::array&) override {
    ADD_FAILURE() << "the checkpoint store does not aggregate";
    return std::vector<bson::document>{};
  }
  mongo::result<snapshot_results> aggregate_snapshot(const std::string&, const std::string&,
                                                     const bson::array&) override {
    ADD_FAILURE() << "the checkpoint store does not aggregate";
    return snapshot_results{};
  }
};

TEST(checkpoint_store_test, save_then_load_round_trips_per_namespace_in_the_meta_database) {
  memory_client client;
  checkpoint_store store(client, "meta");
  const mapping::ns customers{"shop", "customers"};
  auto none = store.load(customers);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(client.last_ns, "meta.denormd_checkpoints");

  ASSERT_TRUE(
      store.save(customers, checkpoint{parse(R"({"_data":"01"})"), 1000, 0, std::nullopt, ""}));
  EXPECT_TRUE(client.upserted);
  ASSERT_TRUE(store.save({"shop", "products"},
                         checkpoint{parse(R"({"_data":"99"})"), 5, 0, std::nullopt, ""}));
  // A quiet save (no event time) moves the token and keeps the last event's time.
  ASSERT_TRUE(
      store.save(customers, checkpoint{parse(R"({"_data":"02"})"), 0, 0, std::nullopt, ""}));
  auto back = store.load(customers);
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ(bson::to_json((*back)->token), R"({"_data":"02"})");
  EXPECT_EQ((*back)->event_ms, 1000);
  EXPECT_GT((*back)->saved_ms, 0);
  EXPECT_EQ(client.docs.size(), 2u);
}

TEST(checkpoint_store_test, a_newer_lease_fences_saves_and_marks_of_older_ones) {
  memory_client client;
  checkpoint_store store(client, "meta");
  const mapping::ns customers{"shop", "customers"};
  auto under = [&](std::int64_t epoch, const char* data) {
    checkpoint cp{parse(std::string(R"({"_data":")") + data + "\"}"), 1, 0, std::nullopt, ""};
    cp.lease_epoch = epoch;
    return store.save(customers, cp);
  };
  // Before any lease (or without --ha) a save is not fenced.
  ASSERT_TRUE(under(0, "01"));
  ASSERT_EQ(store.fence(customers, 3, std::chrono::seconds(1)).value(), 3);
  ASSERT_TRUE(under(3, "02"));
  EXPECT_EQ(client.docs["shop.customers"].get("leaseEpoch")->to_double(), 3);
  // Instance B takes the namespace over at epoch 4: A, at 3, can store nothing any more.
  ASSERT_EQ(store.fence(customers, 4, std::chrono::seconds(1)).value(), 4);
  auto refused = under(3, "03");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, mongo::lease_fenced_code);
  EXPECT_EQ(refused.error().metric_code(), "lease_fenced");
  EXPECT_NE(refused.error().message.find("newer lease than epoch 3"), std::string::npos);
  EXPECT_EQ(bson::to_json(store.load(customers).value()->token), R"({"_data":"02"})");
  // Marking under an older epoch changes nothing and says which epoch is there.
  EXPECT_EQ(store.fence(customers, 2, std::chrono::seconds(1)).value(), 4);
  ASSERT_TRUE(under(4, "04"));
  EXPECT_EQ(bson::to_json(store.load(customers).value()->token), R"({"_data":"04"})");
}

TEST(checkpoint_store_test, stopped_mappings_are_kept_until_a_save_sets_them_again) {
  memory_client client;
  checkpoint_store store(client, "meta");
  const mapping::ns reviews{"shop", "reviews"};
  checkpoint cp{parse(R"({"_data":"05"})"), 1, 0, std::nullopt, ""};
  cp.lease_epoch = 2;
  cp.stopped = std::vector<stopped_mapping>{
      {"recent-reviews", "f1", parse(R"({"_data":"04"})"), bson::timestamp{9, 1}, "[]"},
      {"twin", "f2", parse(R"({"_data":"03"})"), std::nullopt, ""}};
  ASSERT_TRUE(store.save(reviews, cp));
  // A pipeline's saves move the token and leave the list alone.
  ASSERT_TRUE(store.save(
      reviews, checkpoint{parse(R"({"_data":"06"})"), 1, 0, std::nullopt, "", 2, std::nullopt}));
  auto back = store.load(reviews).value();
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(bson::to_json(back->token), R"({"_data":"06"})");
  ASSERT_TRUE(back->stopped.has_value());
  EXPECT_EQ(*back->stopped, *cp.stopped);
  // An empty list removes them; a malformed entry is skipped, not fatal.
  cp.stopped = std::vector<stopped_mapping>{};
  ASSERT_TRUE(store.save(reviews, cp));
  EXPECT_FALSE(client.docs["shop.reviews"].contains("stoppedMappings"));
  auto odd = parse_checkpoint(parse(R"({"token":{"_data":"07"},"stoppedMappings":[
      {"mapping":"a"},7,{"mapping":"b","fingerprint":"f","token":{"_data":"01"}}]})"));
  ASSERT_TRUE(odd && odd->stopped);
  ASSERT_EQ(odd->stopped->size(), 1u);
  EXPECT_EQ(odd->stopped->front().mapping, "b");
}

TEST(checkpoint_store_test, failures_are_returned_as_values) {
  memory_client client;
  checkpoint_store store(client, "meta");
  client.fail = mongo::driver_error{mongo::driver_error::origin::network, 0, "down", {}};
  auto loaded = store.load({"shop", "customers"});
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message, "down");
  auto saved = store.save({"shop", "customers"},
                          checkpoint{parse(R"({"_data":"01"})"), 1, 0, std::nullopt, ""});
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().message, "down");
}

// The write fence in a real server (the test server, or DENORMD_TEST_URI): claims, marks and the
// fence statement are conditional writes of the checkpoint document, and a transaction of an
// older writer commits nothing once the epoch moved, even one left open across the move.
class write_fence_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = mongo::connection::open(test::test_uri(), "write_fence_test");
    ASSERT_TRUE(c) << c.error().to_string();
    conn_ = std::move(c).value();
    db_ = "write_fence_test_" + std::to_string(std::random_device{}());
    store_ = std::make_unique<checkpoint_store>(*conn_, db_);
  }
  void TearDown() override {
    if (conn_) (void)conn_->command(db_, bson::document{{"dropDatabase", 1}});
  }

  // A write of a target document then the fence at `epoch`, in a transaction on `session` left
  // open: the fence statement's outcome (matched 1: held).
  std::int64_t fence_in(mongo::transaction& txn, std::int64_t epoch, int order) {
    const bson::document filter{{"_id", order}};
    const bson::document update{{"$set", bson::document{{"epoch", epoch}}}};
    mongo::write_request w;
    w.filter = &filter;
    w.update = &update;
    w.upsert = true;
    auto wrote = txn.update_bulk(db_, "orders", std::span(&w, 1), true);
    EXPECT_TRUE(wrote && !wrote->write_error);
    bson::document ff, fu;
    const auto r = fence_statement(source_, epoch, ff, fu);
    auto fenced = txn.update_bulk(db_, collection_name, std::span(&r, 1), true);
    EXPECT_TRUE(fenced) << fenced.error().to_string();
    return fenced ? fenced->matched : -1;
  }
  std::optional<bson::document> order(int id) {
    return conn_->find_one(db_, "orders", bson::document{{"_id", id}}).value();
  }

  std::unique_ptr<mongo::connection> conn_;
  std::string db_;
  std::unique_ptr<checkpoint_store> store_;
  const mapping::ns source_{"shop", "customers"};
};

TEST_F(write_fence_test, each_claim_takes_the_next_epoch_and_records_its_writer) {
  auto s1 = conn_->start_session().value();
  const writer_session one{s1->id(), "host:1:a"};
  EXPECT_EQ(store_->claim(source_, one, std::chrono::seconds(5)).value(), 1);
  EXPECT_EQ(store_->claim(source_, one, std::chrono::seconds(5)).value(), 2);
  auto doc = conn_->find_one(db_, collection_name, bson::document{{"_id", "shop.customers"}});
  ASSERT_TRUE(doc && *doc);
  EXPECT_EQ((*doc)->get("leaseEpoch")->to_double(), 2);
  EXPECT_EQ((*doc)->get("writer")->as_document().get("process")->as_string(), "host:1:a");
  // A checkpoint saved under an older epoch is refused.
  checkpoint cp{parse(R"({"_data":"01"})"), 1, 0, std::nullopt, ""};
  cp.lease_epoch = 1;
  auto old = store_->save(source_, cp);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, mongo::lease_fenced_code);
  cp.lease_epoch = 2;
  EXPECT_TRUE(store_->save(source_, cp));
}

TEST_F(write_fence_test, a_claim_ends_the_open_transaction_the_previous_process_left_behind) {
  // Process one wrote an order and the fence, and was killed before its commit: its
  // transaction holds both documents until the server ends it (60 s by default).
  auto s1 = conn_->start_session().value();
  ASSERT_EQ(store_->claim(source_, {s1->id(), "host:1:a"}, std::chrono::seconds(5)).value(), 1);
  auto t1 = s1->start_transaction().value();
  ASSERT_EQ(fence_in(*t1, 1, 7), 1);
  // Process two claims: it ends one's session first, so it neither waits nor fails.
  auto s2 = conn_->start_session().value();
  const auto sent = std::chrono::steady_clock::now();
  auto claimed = store_->claim(source_, {s2->id(), "host:2:b"}, std::chrono::seconds(5));
  ASSERT_TRUE(claimed) << claimed.error().to_string();
  EXPECT_EQ(*claimed, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(3));
  // One's commit, arriving late, commits nothing.
  EXPECT_FALSE(t1->commit());
  EXPECT_FALSE(order(7).has_value());
  // Two's transactions fence at 2 and commit.
  auto t2 = s2->start_transaction().value();
  ASSERT_EQ(fence_in(*t2, 2, 7), 1);
  ASSERT_TRUE(t2->commit());
  EXPECT_EQ(order(7)->get("epoch")->to_double(), 2);
}

TEST_F(write_fence_test, a_transaction_fenced_at_an_older_epoch_matches_nothing) {
  auto s1 = conn_->start_session().value();
  ASSERT_EQ(store_->claim(source_, {s1->id(), "p1"}, std::chrono::seconds(5)).value(), 1);
  auto s2 = conn_->start_session().value();
  ASSERT_EQ(store_->claim(source_, {s2->id(), "p2"}, std::chrono::seconds(5)).value(), 2);
  auto t1 = s1->start_transaction().value();
  EXPECT_EQ(fence_in(*t1, 1, 8), 0);  // the writer sees the fence moved, and does not commit
}

TEST_F(write_fence_test, a_takeover_under_a_lease_marks_publishes_and_ends_the_old_writer) {
  auto s1 = conn_->start_session().value();
  ASSERT_EQ(store_->fence(source_, 1, std::chrono::seconds(1)).value(), 1);
  ASSERT_TRUE(store_->publish_writer(source_, 1, {s1->id(), "host:1:a"}).value());
  auto t1 = s1->start_transaction().value();
  ASSERT_EQ(fence_in(*t1, 1, 9), 1);  // paused before its commit
  // The new holder ends the old writer's session (not its own), then marks epoch 2.
  EXPECT_EQ(store_->end_writer_of_other(source_, "host:2:b").value(), "host:1:a");
  ASSERT_EQ(store_->fence(source_, 2, std::chrono::seconds(1)).value(), 2);
  auto s2 = conn_->start_session().value();
  EXPECT_FALSE(store_->publish_writer(source_, 1, {s2->id(), "host:2:b"}).value());
  EXPECT_TRUE(store_->publish_writer(source_, 2, {s2->id(), "host:2:b"}).value());
  EXPECT_FALSE(t1->commit());
  EXPECT_FALSE(order(9).has_value());
  // Its own writer's session is never ended by it.
  auto t2 = s2->start_transaction().value();
  ASSERT_EQ(fence_in(*t2, 2, 9), 1);
  EXPECT_FALSE(store_->end_writer_of_other(source_, "host:2:b").value().has_value());
  EXPECT_TRUE(t2->commit());
}

}  // namespace
}  // namespace denormd::checkpoint
