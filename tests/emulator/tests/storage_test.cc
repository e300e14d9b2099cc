// Storage's transactions without a server, in the order the dispatcher's threads can interleave
// them: a statement enters its transaction under the lock, releases it, and runs its handler
// under the lock again, while another connection's step-down aborts every open transaction in
// between.

#include "storage.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "error_codes.h"

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

}  // namespace
}  // namespace mongo_emulator
