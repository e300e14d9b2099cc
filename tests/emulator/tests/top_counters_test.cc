// top_counters without a server: which counter each command adds to (MongoDB's Top, by the
// command's LogicalOp and lock), per-statement counting of update and delete, entries removed
// with what was dropped, and the reply's shape and number types.

#include "top_counters.h"

#include <gtest/gtest.h>

#include <chrono>

namespace mongo_emulator {
namespace {

using std::chrono::microseconds;

bson::document doc(std::initializer_list<bson::field> fields) {
  return bson::document(fields);
}

const bson::document& entry(const bson::document& top, std::string_view ns) {
  static const bson::document none;
  const auto* e = top.get(ns);
  return e != nullptr && e->is_document() ? e->as_document() : none;
}

// {time, count} of one counter of one namespace.
std::pair<std::int64_t, std::int64_t> counter(const bson::document& top, std::string_view ns,
                                              std::string_view name) {
  const auto* c = entry(top, ns).get(name);
  if (c == nullptr || !c->is_document()) return {-1, -1};
  const auto num = [](const bson::value* v) {
    return v == nullptr ? -1 : static_cast<std::int64_t>(v->to_double());
  };
  return {num(c->as_document().get("time")), num(c->as_document().get("count"))};
}

TEST(top_counters, classifies_commands_as_mongodb_records_them) {
  top_counters top;
  top.record_command("find", "db", doc({{"find", "c"}}), microseconds(10));
  top.record_command("getMore", "db", doc({{"getMore", std::int64_t{5}}, {"collection", "c"}}),
                     microseconds(20));
  top.record_command("insert", "db",
                     doc({{"insert", "c"},
                          {"documents", bson::array{bson::value(doc({{"_id", 1}})),
                                                    bson::value(doc({{"_id", 2}}))}}}),
                     microseconds(40));
  top.record_command(
      "update", "db",
      doc({{"update", "c"},
           {"updates", bson::array{bson::value(bson::document{}), bson::value(bson::document{}),
                                   bson::value(bson::document{})}}}),
      microseconds(31));
  top.record_command("delete", "db", doc({{"delete", "c"}, {"deletes", bson::array{}}}),
                     microseconds(5));
  top.record_command("findAndModify", "db", doc({{"findAndModify", "c"}}), microseconds(7));
  top.record_command("aggregate", "db", doc({{"aggregate", "c"}}), microseconds(3));
  top.record_command("count", "db", doc({{"count", "c"}}), microseconds(2));
  top.record_command("distinct", "db", doc({{"distinct", "c"}}), microseconds(1));
  top.record_command("createIndexes", "db", doc({{"createIndexes", "c"}}), microseconds(100));
  // Commands that name no collection, or that Top does not record.
  top.record_command("ping", "admin", doc({{"ping", 1}}), microseconds(1000));
  top.record_command("create", "db", doc({{"create", "d"}}), microseconds(1000));
  const auto t = top.to_document();
  EXPECT_EQ(t.fields().front().name, "note");
  EXPECT_EQ(*t.get("note"), bson::value("all times in microseconds"));
  EXPECT_EQ(t.size(), 2U) << "only db.c is recorded";
  EXPECT_EQ(counter(t, "db.c", "queries"), std::make_pair(std::int64_t{10}, std::int64_t{1}));
  EXPECT_EQ(counter(t, "db.c", "getmore"), std::make_pair(std::int64_t{20}, std::int64_t{1}));
  EXPECT_EQ(counter(t, "db.c", "insert"), std::make_pair(std::int64_t{40}, std::int64_t{1}));
  // One per statement, the command's time shared among them.
  EXPECT_EQ(counter(t, "db.c", "update"), std::make_pair(std::int64_t{31}, std::int64_t{3}));
  EXPECT_EQ(counter(t, "db.c", "remove"), std::make_pair(std::int64_t{5}, std::int64_t{1}));
  EXPECT_EQ(counter(t, "db.c", "commands"), std::make_pair(std::int64_t{113}, std::int64_t{5}));
  EXPECT_EQ(counter(t, "db.c", "readLock"), std::make_pair(std::int64_t{36}, std::int64_t{5}));
  EXPECT_EQ(counter(t, "db.c", "writeLock"), std::make_pair(std::int64_t{183}, std::int64_t{7}));
  EXPECT_EQ(counter(t, "db.c", "total"), std::make_pair(std::int64_t{219}, std::int64_t{12}));
  std::vector<std::string> names;
  for (const auto& f : entry(t, "db.c"))
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"total", "readLock", "writeLock", "queries", "getmore",
                                             "insert", "update", "remove", "commands"}));
}

TEST(top_counters, aggregate_one_records_on_the_cmd_namespace) {
  top_counters top;
  top.record_command("aggregate", "db", doc({{"aggregate", 1}}), microseconds(4));
  EXPECT_EQ(counter(top.to_document(), "db.$cmd.aggregate", "commands"),
            std::make_pair(std::int64_t{4}, std::int64_t{1}));
}

TEST(top_counters, drops_remove_their_entries) {
  top_counters top;
  for (const char* coll : {"a", "b"}) {
    top.record_command("find", "x", doc({{"find", coll}}), microseconds(1));
    top.record_command("find", "y", doc({{"find", coll}}), microseconds(1));
  }
  top.record_command("drop", "x", doc({{"drop", "a"}}), microseconds(1));
  top.record_command("renameCollection", "admin", doc({{"renameCollection", "y.a"}, {"to", "y.z"}}),
                     microseconds(1));
  auto t = top.to_document();
  EXPECT_EQ(t.get("x.a"), nullptr);
  EXPECT_EQ(t.get("y.a"), nullptr);
  EXPECT_NE(t.get("x.b"), nullptr);
  top.record_command("dropDatabase", "y", doc({{"dropDatabase", 1}}), microseconds(1));
  t = top.to_document();
  EXPECT_EQ(t.get("y.b"), nullptr);
  EXPECT_NE(t.get("x.b"), nullptr);
}

// appendNumber(long long): int32 while the value fits, int64 past it.
TEST(top_counters, numbers_are_int32_until_they_outgrow_it) {
  top_counters top;
  top.record("db.c", top_counters::bucket::queries, top_counters::lock_kind::read, 7);
  auto t = top.to_document();
  EXPECT_TRUE(entry(t, "db.c").get("total")->as_document().get("time")->is<std::int32_t>());
  top.record("db.c", top_counters::bucket::queries, top_counters::lock_kind::read,
             std::int64_t{3} << 31);
  t = top.to_document();
  const auto* time = entry(t, "db.c").get("total")->as_document().get("time");
  ASSERT_TRUE(time->is<std::int64_t>());
  EXPECT_EQ(time->as<std::int64_t>(), (std::int64_t{3} << 31) + 7);
  EXPECT_TRUE(entry(t, "db.c").get("total")->as_document().get("count")->is<std::int32_t>());
}

}  // namespace
}  // namespace mongo_emulator
