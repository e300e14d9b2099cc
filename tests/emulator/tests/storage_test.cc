// Storage's transactions without a server, in the order the dispatcher's threads can interleave
// them: a statement enters its transaction under the lock, releases it, and runs its handler
// under the lock again, while another connection's step-down aborts every open transaction in
// between.

#include "storage.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "error_codes.h"
#include "query/matcher.h"

namespace mongo_emulator {
namespace {

doc_ptr D(std::string_view json) {
  return std::make_shared<const bson::document>(bson::parse_json(json).value());
}

TEST(storage_test, a_statement_outlives_its_transaction_aborted_by_a_step_down) {
  storage store(1000, std::chrono::seconds(60));
  const bson::document lsid{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 7)}}};
  {
    auto lock = store.lock_for_write();
    ASSERT_TRUE(store.insert(store.obtain("db", "c"), D(R"({"_id": 1, "a": 1})")));
  }
  // The dispatcher enters the transaction and keeps what begin_or_continue gave it.
  auto entered = [&] {
    auto lock = store.lock_for_write();
    return store.begin_or_continue(lsid, 1, true);
  }();
  ASSERT_TRUE(entered) << entered.error().message;
  transaction* txn = &**entered;
  {  // replSetStepDown on another connection
    auto lock = store.lock_for_write();
    store.abort_all_transactions();
  }
  {  // the statement's handler reads through its transaction (find in a transaction)
    auto lock = store.lock_for_read();
    const collection* view = store.find("db", "c", txn);
    ASSERT_NE(view, nullptr);
    const auto record = view->find_id(bson::value(std::int32_t{1}));
    ASSERT_TRUE(record);
    EXPECT_EQ(*view->get(*record)->get("a"), bson::value(std::int32_t{1}));
  }
  {  // a write of the statement: its transaction is gone, so it claims nothing
    auto lock = store.lock_for_write();
    auto inserted = store.insert(store.obtain("db", "c", txn), D(R"({"_id": 2})"));
    ASSERT_FALSE(inserted);
    EXPECT_EQ(inserted.error().code, codes::no_such_transaction);
    EXPECT_EQ(inserted.error().message, "Transaction 1 has been aborted.");
  }
  {  // so a write outside any transaction does not wait for it
    auto lock = store.lock_for_write();
    EXPECT_TRUE(store.insert(store.obtain("db", "c"), D(R"({"_id": 2})")));
  }
}

// The _ids of the documents `view` finds for `filter_json`, in natural order.
std::vector<std::int32_t> ids_matching(const collection& view, std::string_view filter_json) {
  auto m = denormd::query::matcher::compile(bson::parse_json(filter_json).value()).value();
  std::vector<std::int32_t> out;
  for (auto r : view.candidates(m)) {
    const doc_ptr& d = view.get(r);
    if (d != nullptr && m.matches(*d)) out.push_back(d->get("_id")->as<std::int32_t>());
  }
  return out;
}

// A transaction's view reads the stored collection without copying it: what others change
// after the snapshot is shown as it was, and the transaction's own writes (which may move a
// document to another index key) are found by the same lookups.
TEST(storage_test, a_view_shows_the_snapshot_and_its_own_writes_through_the_indexes) {
  storage store(1000, std::chrono::seconds(60));
  const bson::document lsid{{"id", bson::binary{4, std::vector<std::uint8_t>(16, 3)}}};
  {
    auto lock = store.lock_for_write();
    collection& c = store.obtain("db", "c");
    index_spec by_k{"k_1", bson::document{{"k", std::int32_t{1}}}, false, false, {}};
    index_spec by_u{"u_1", bson::document{{"u", std::int32_t{1}}}, true, false, {}};
    ASSERT_TRUE(c.create_index(by_k));
    ASSERT_TRUE(c.create_index(by_u));
    for (int i = 1; i <= 5; ++i) {
      const std::string doc = "{\"_id\": " + std::to_string(i) +
                              ", \"k\": " + std::to_string(i % 2) +
                              ", \"u\": " + std::to_string(i) + "}";
      ASSERT_TRUE(store.insert(c, D(doc)));
    }
  }
  auto txn = [&] {
    auto lock = store.lock_for_write();
    return store.begin_or_continue(lsid, 1, true).value();
  }();
  {
    auto lock = store.lock_for_write();
    collection& view = store.obtain("db", "c", txn.get());
    EXPECT_EQ(ids_matching(view, R"({"k": 1})"), (std::vector<std::int32_t>{1, 3, 5}));
    // Its own writes: 3 moves to k 0, 6 is new with k 1, 5 is deleted (freeing u 5).
    auto r3 = view.find_id(bson::value(std::int32_t{3}));
    ASSERT_TRUE(r3);
    ASSERT_TRUE(store.update(view, *r3, D(R"({"_id": 3, "k": 0, "u": 3})"),
                             bson::document{{"updatedFields", bson::document{{"k", 0}}}}));
    ASSERT_TRUE(store.insert(view, D(R"({"_id": 6, "k": 1, "u": 60})")));
    ASSERT_TRUE(store.remove(view, *view.find_id(bson::value(std::int32_t{5}))));
    // A unique key the view still holds is refused; one its own delete freed is not.
    auto dup = store.insert(view, D(R"({"_id": 7, "k": 0, "u": 60})"));
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().code, codes::duplicate_key);
    EXPECT_TRUE(store.insert(view, D(R"({"_id": 8, "k": 0, "u": 5})")));
  }
  {  // others, after the snapshot: 1 changes key, 2 is deleted, 9 is inserted
    auto lock = store.lock_for_write();
    collection& c = store.obtain("db", "c");
    ASSERT_TRUE(store.update(c, *c.find_id(bson::value(std::int32_t{1})),
                             D(R"({"_id": 1, "k": 0, "u": 1})"),
                             bson::document{{"updatedFields", bson::document{{"k", 0}}}}));
    ASSERT_TRUE(store.remove(c, *c.find_id(bson::value(std::int32_t{2}))));
    ASSERT_TRUE(store.insert(c, D(R"({"_id": 9, "k": 1, "u": 9})")));
    ASSERT_TRUE(store.insert(c, D(R"({"_id": 2, "k": 1, "u": 2})")));  // 2 again, changed
  }
  {
    auto lock = store.lock_for_read();
    const collection* view = store.find("db", "c", txn.get());
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(ids_matching(*view, R"({"k": 1})"), (std::vector<std::int32_t>{1, 6}));
    EXPECT_EQ(ids_matching(*view, R"({"k": 0})"), (std::vector<std::int32_t>{2, 3, 4, 8}));
    EXPECT_EQ(ids_matching(*view, R"({})"), (std::vector<std::int32_t>{1, 2, 3, 4, 6, 8}));
    EXPECT_EQ(view->size(), 6U);
    EXPECT_FALSE(view->find_id(bson::value(std::int32_t{9})));
    EXPECT_EQ(*view->get(*view->find_id(bson::value(std::int32_t{2})))->get("k"),
              bson::value(std::int32_t{0}));
    // The stored collection is untouched by the open transaction.
    const collection* c = store.find("db", "c");
    EXPECT_EQ(ids_matching(*c, R"({"k": 1})"), (std::vector<std::int32_t>{3, 5, 9, 2}));
  }
  {
    auto lock = store.lock_for_write();
    ASSERT_TRUE(store.commit_transaction(lsid, 1));
    const collection* c = store.find("db", "c");
    EXPECT_EQ(ids_matching(*c, R"({"k": 1})"), (std::vector<std::int32_t>{9, 2, 6}));
    EXPECT_EQ(c->size(), 7U);
  }
}

}  // namespace
}  // namespace mongo_emulator
