// Resume tokens and the bounded change history without a server.

#include <gtest/gtest.h>

#include "oplog.h"
#include "resume_token.h"

namespace mongo_emulator {
namespace {

using kind = resume_token::kind;

TEST(resume_token, round_trips_and_sorts_in_event_order) {
  const resume_token a({100, 1}, kind::event);
  const resume_token b({100, 1}, kind::invalidate);
  const resume_token c({100, 1}, kind::high_water);
  const resume_token d({100, 2}, kind::event);
  const resume_token e({101, 0}, kind::event);
  for (const auto& t : {a, b, c, d, e}) {
    auto parsed = resume_token::parse(bson::value(t.to_document()));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_LT(a.data(), b.data());
  EXPECT_LT(b.data(), c.data());
  EXPECT_LT(c.data(), d.data());
  EXPECT_LT(d.data(), e.data());
  EXPECT_TRUE(a < b && b < c && c < d && d < e);
}

TEST(resume_token, before_is_just_under_a_time) {
  EXPECT_EQ(resume_token::before({100, 5}), resume_token({100, 4}, kind::high_water));
  EXPECT_EQ(resume_token::before({100, 0}), resume_token({99, 0xFFFFFFFFU}, kind::high_water));
  EXPECT_LT(resume_token::before({100, 5}), resume_token({100, 5}, kind::event));
}

TEST(resume_token, rejects_foreign_tokens_with_40647) {
  for (const char* data : {"", "zz", "0000006400000001", "00000064000000010", "0000006400000001FF",
                           "0000006400000001ab"}) {
    auto t = resume_token::parse(bson::value(bson::document{{"_data", data}}));
    ASSERT_FALSE(t) << data;
    EXPECT_EQ(t.error().code, 40647);
  }
  EXPECT_FALSE(resume_token::parse(bson::value(std::int32_t{1})));
  EXPECT_FALSE(resume_token::parse(bson::value(bson::document{{"_data", std::int32_t{1}}})));
}

oplog_entry at(std::uint32_t i) {
  oplog_entry e;
  e.ts = {100, i};
  return e;
}

TEST(oplog, keeps_the_newest_entries_and_reports_lost_history) {
  oplog log(3);
  for (std::uint32_t i = 1; i <= 3; ++i)
    log.append(at(i));
  EXPECT_FALSE(log.history_lost({100, 0}, false));
  EXPECT_FALSE(log.history_lost({100, 1}, true));
  for (std::uint32_t i = 4; i <= 5; ++i)
    log.append(at(i));
  ASSERT_EQ(log.size(), 3U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 3}));
  // Entries 1 and 2 are gone: resuming after 1 loses 2; after 2 loses nothing.
  EXPECT_TRUE(log.history_lost({100, 1}, false));
  EXPECT_FALSE(log.history_lost({100, 2}, false));
  // An event token must still have its own event.
  EXPECT_TRUE(log.history_lost({100, 2}, true));
  EXPECT_FALSE(log.history_lost({100, 3}, true));
  EXPECT_EQ(log.find({100, 4})->ts, (bson::timestamp{100, 4}));
  EXPECT_EQ(log.find({100, 2}), nullptr);
  EXPECT_EQ(log.lower_bound({100, 4}), 1U);
  EXPECT_EQ(log.lower_bound({101, 0}), 3U);
}

TEST(oplog, documents_look_like_mongodb_oplog_entries) {
  const auto uuid =
      std::make_shared<const bson::binary>(bson::binary{4, std::vector<std::uint8_t>(16, 7)});
  oplog_entry insert;
  insert.ts = {100, 1};
  insert.wall_ms = 100000;
  insert.db = "shop";
  insert.coll = "orders";
  insert.uuid = uuid;
  insert.id = bson::value(std::int32_t{5});
  insert.full_document = std::make_shared<const bson::document>(
      bson::document{{"_id", std::int32_t{5}}, {"total", 12.5}});
  const auto i = oplog_document(insert);
  std::vector<std::string> names;
  for (const auto& f : i)
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"op", "ns", "ui", "o", "ts", "t", "v", "wall"}));
  EXPECT_EQ(*i.get("op"), bson::value("i"));
  EXPECT_EQ(*i.get("ns"), bson::value("shop.orders"));
  EXPECT_EQ(*i.get("ui"), bson::value(*uuid));
  EXPECT_EQ(*i.get("o"), bson::value(*insert.full_document));
  EXPECT_EQ(*i.get("ts"), bson::value(bson::timestamp{100, 1}));
  EXPECT_EQ(*i.get("t"), bson::value(std::int64_t{1}));
  EXPECT_EQ(*i.get("v"), bson::value(std::int64_t{2}));
  EXPECT_EQ(*i.get("wall"), bson::value(bson::date_time{100000}));

  oplog_entry update = insert;
  update.op = op_type::update;
  const auto u = oplog_document(update);
  EXPECT_EQ(*u.get("op"), bson::value("u"));
  EXPECT_EQ(u.get("o"), nullptr);  // MongoDB's {$v: 2, diff} is not kept
  EXPECT_EQ(*u.get("o2"), bson::value(bson::document{{"_id", std::int32_t{5}}}));

  oplog_entry remove = insert;
  remove.op = op_type::remove;
  remove.full_document = nullptr;
  const auto d = oplog_document(remove);
  EXPECT_EQ(*d.get("op"), bson::value("d"));
  EXPECT_EQ(*d.get("o"), bson::value(bson::document{{"_id", std::int32_t{5}}}));
  EXPECT_EQ(d.get("o2"), nullptr);

  oplog_entry rename = insert;
  rename.op = op_type::rename;
  rename.to_db = "shop";
  rename.to_coll = "old_orders";
  const auto r = oplog_document(rename);
  EXPECT_EQ(*r.get("op"), bson::value("c"));
  EXPECT_EQ(*r.get("ns"), bson::value("shop.$cmd"));
  EXPECT_EQ(*r.get("o"), bson::value(bson::document{{"renameCollection", "shop.orders"},
                                                    {"to", "shop.old_orders"},
                                                    {"stayTemp", false}}));

  oplog_entry drop_db;
  drop_db.op = op_type::drop_database;
  drop_db.db = "shop";
  const auto dd = oplog_document(drop_db);
  EXPECT_EQ(dd.get("ui"), nullptr);
  EXPECT_EQ(*dd.get("o"), bson::value(bson::document{{"dropDatabase", std::int32_t{1}}}));
}

// replSetResizeOplog: a smaller bound drops the oldest entries at once (losing their history), a
// larger one keeps more.
TEST(oplog, resize_moves_the_bound) {
  oplog log(5);
  for (std::uint32_t i = 1; i <= 5; ++i)
    log.append(at(i));
  log.resize(2, 0);
  EXPECT_EQ(log.max_events(), 2U);
  ASSERT_EQ(log.size(), 2U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 4}));
  EXPECT_TRUE(log.history_lost({100, 2}, false));
  log.resize(4, 0);
  for (std::uint32_t i = 6; i <= 8; ++i)
    log.append(at(i));
  ASSERT_EQ(log.size(), 4U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 5}));
}

// minRetentionHours: entries younger than that stay past the bound (MongoDB lets the oplog grow
// rather than truncate them); older ones go as usual.
TEST(oplog, min_retention_keeps_young_entries_past_the_bound) {
  constexpr std::int64_t hour_ms = 3600 * 1000;
  constexpr std::int64_t now = 1000 * hour_ms;
  oplog log(2);
  for (std::uint32_t i = 1; i <= 2; ++i) {
    auto e = at(i);
    e.wall_ms = now - 10 * hour_ms;  // old
    log.append(e);
  }
  log.resize(2, 5);
  EXPECT_EQ(log.min_retention_hours(), 5.0);
  for (std::uint32_t i = 3; i <= 6; ++i) {
    auto e = at(i);
    e.wall_ms = now - 1 * hour_ms;  // within the 5 hours
    log.append(e);
  }
  // The two old ones went; the four young ones stay although the bound is 2.
  ASSERT_EQ(log.size(), 4U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 3}));
  auto later = at(7);
  later.wall_ms = now + 10 * hour_ms;  // now they are old: trimmed back to the bound
  log.append(later);
  ASSERT_EQ(log.size(), 2U);
  EXPECT_EQ(log.at(0).ts, (bson::timestamp{100, 6}));
}

}  // namespace
}  // namespace mongo_emulator
