// The supervisor with fake parts (a scripted change source, a recording writer and checkpoint
// store): pipelines start, stop and are replaced one at a time while the others run; a
// replacement resumes after the last applied item with its new planner; stop_all() keeps the
// daemon's shutdown order; a re-sync waits until everything read is applied, streams beside
// its backfill and holds the checkpoints until the backfill is done.
#include "pipeline/supervisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bson/convert.h"
#include "bson/json.h"
#include "config/mapping_loader.h"

namespace denormd::pipeline {
namespace {

const mapping::ns customers{"shop", "customers"};
const mapping::ns products{"shop", "products"};

// A copy mapping from `coll` into orders, copying `field`.
std::string copy_mapping(const std::string& coll, const std::string& field) {
  return R"({"name":")" + coll + "-" + field + R"(","kind":"copy","source":{"collection":")" +
         coll + R"("},"target":{"collection":"orders","key":")" + coll + R"(Id"},"into":")" + coll +
         R"(","fields":{")" + field + R"(":")" + field + R"("}})";
}

std::shared_ptr<const mapping::planner> planner_of(const std::vector<std::string>& texts) {
  std::vector<mapping::mapping> all;
  for (const auto& text : texts) {
    auto r = config::parse_mapping("test.json", text, "shop");
    EXPECT_TRUE(r.has_value()) << text;
    if (r) std::move(r->begin(), r->end(), std::back_inserter(all));
  }
  return std::make_shared<const mapping::planner>(std::move(all));
}

std::string data_of(const bson::document& t) {
  const bson::value* d = t.get("_data");
  return d != nullptr && d->is_string() ? d->as_string() : "";
}

// A rename of document 1 of `coll` (its "name" changes), as a watcher queues it; at cluster
// time `t`:1 when `t` is not 0.
source::stream_item rename(const mapping::ns& ns, const std::string& data, std::uint32_t t = 0) {
  const std::string at =
      t == 0 ? "" : R"("clusterTime":{"$timestamp":{"t":)" + std::to_string(t) + R"(,"i":1}},)";
  auto doc = bson::parse_json(R"({"_id":{"_data":")" + data + R"("},"operationType":"update",)" +
                              at + R"("ns":{"db":"shop","coll":")" + ns.coll +
                              R"("},"documentKey":{"_id":1},"updateDescription":{
    "updatedFields":{"name":"n"},"removedFields":[]},"fullDocument":{"_id":1,"name":"n"}})");
  EXPECT_TRUE(doc.has_value());
  source::stream_item item;
  bson::append_bytes(doc ? *doc : bson::document{}, item.event);
  item.token = bson::document{{"_data", data}};
  item.event_ms = 1000;
  return item;
}

// What the fakes saw, in order: "apply <coll> <ops> <tokens...>", "save <coll> <token>",
// "stop <coll>" (a source asked to stop), "resyncing <coll>" (a source called its re-sync
// hook), "resync <coll> <events acknowledged so far>" (the hook took the start time),
// "backfill <coll>" and then "backfill <coll> done" or "backfill <coll> stopped".
struct journal {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> lines;
  std::map<std::string, int> acked;  // events acknowledged per collection
  std::atomic<bool> writes_fail{false};
  std::atomic<bool> backfills_wait{false};  // a re-sync's backfill waits until this is false

  void add(std::string line) {
    std::lock_guard lock(mutex);
    lines.push_back(std::move(line));
    changed.notify_all();
  }
  bool has(const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  }
  // Bounded wait until `line` was added.
  bool wait_for(const std::string& line) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return has(line); });
  }
  int acked_events(const std::string& coll) {
    std::lock_guard lock(mutex);
    return acked[coll];
  }
};

class fake_parts;

// A change source that pushes what the test feeds it, in order, from its own thread; a
// feed without an item runs the re-sync hook.
class fake_source final : public source::change_source {
 public:
  fake_source(fake_parts& parts, mapping::ns ns, source::event_queue& queue,
              source::resync_hook resync)
      : parts_(parts), ns_(std::move(ns)), queue_(queue), resync_(std::move(resync)) {}
  ~fake_source() override;

  void start() override {
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }
  void request_stop() override;
  void join() override;
  bool ready() const override { return ready_.load(); }
  std::string state() const override { return ready_.load() ? "streaming" : "stopped"; }
  std::uint64_t pushed() const override { return pushed_.load(); }
  std::uint64_t errors() const override { return 0; }

  void feed(std::optional<source::stream_item> item) {
    std::lock_guard lock(mutex_);
    inbox_.push_back(std::move(item));
    fed_.notify_all();
  }
  // The re-sync hook's outcome: "" before it returned, "stopped", "error" or "from <t>".
  std::string resync_outcome() {
    std::lock_guard lock(mutex_);
    return resync_outcome_;
  }
  // Whether the latest re-sync's backfill finished.
  bool resync_finished() {
    std::lock_guard lock(mutex_);
    return finished_ && finished_->load();
  }

 private:
  void run(std::stop_token stop);

  fake_parts& parts_;
  const mapping::ns ns_;
  source::event_queue& queue_;
  source::resync_hook resync_;
  std::atomic<bool> ready_{false};
  std::atomic<std::uint64_t> pushed_{0};
  std::mutex mutex_;
  std::condition_variable_any fed_;
  std::deque<std::optional<source::stream_item>> inbox_;
  std::string resync_outcome_;
  std::shared_ptr<const std::atomic<bool>> finished_;
  std::jthread thread_;
};

class fake_writer final : public sink::batch_writer {
 public:
  explicit fake_writer(journal& j) : journal_(j) {}
  mongo::status apply(std::span<const mapping::write_op> ops,
                      std::span<const bson::document> event_tokens,
                      const mapping::ns& source) override {
    if (journal_.writes_fail) {
      return mongo::failure(
          mongo::driver_error{mongo::driver_error::origin::server, 91, "shutting down", {}});
    }
    std::string line = "apply " + source.coll + " " + std::to_string(ops.size());
    for (const auto& t : event_tokens)
      line += " " + data_of(t);
    {
      std::lock_guard lock(journal_.mutex);
      journal_.acked[source.coll] += static_cast<int>(event_tokens.size());
    }
    journal_.add(line);
    return {};
  }

 private:
  journal& journal_;
};

class fake_store final : public checkpoint::position_store {
 public:
  explicit fake_store(journal& j) : journal_(j) {}
  mongo::result<std::optional<checkpoint::checkpoint>> load(const mapping::ns&) override {
    return std::optional<checkpoint::checkpoint>{};
  }
  mongo::status save(const mapping::ns& source, const checkpoint::checkpoint& cp) override {
    journal_.add("save " + source.coll + " " + data_of(cp.token));
    return {};
  }

 private:
  journal& journal_;
};

class fake_parts final : public parts_factory {
 public:
  journal log;
  // Every source made, with where it was told to start (latest last).
  struct made {
    mapping::ns ns;
    start_position from;
    fake_source* source;
    source::event_queue* queue;
  };
  std::vector<made> sources;
  std::unique_ptr<source::change_source> make_source(const mapping::ns& ns,
                                                     const start_position& from,
                                                     mapping::stream_images /*images*/,
                                                     const bson::array& /*filter*/,
                                                     source::event_queue& queue,
                                                     source::resync_hook resync) override {
    auto s = std::make_unique<fake_source>(*this, ns, queue, std::move(resync));
    std::lock_guard lock(mutex);
    sources.push_back(made{ns, from, s.get(), &queue});
    return s;
  }
  std::unique_ptr<sink::batch_writer> make_writer(const mapping::ns&) override {
    return std::make_unique<fake_writer>(log);
  }
  checkpoint::position_store& positions() override { return store_; }
  mongo::result<bson::timestamp> resync_start(const mapping::ns& ns) override {
    log.add("resync " + ns.coll + " " + std::to_string(log.acked_events(ns.coll)));
    return bson::timestamp{7, 1};
  }
  mongo::result<bool> resync_backfill(const mapping::planner&, const mapping::ns& ns,
                                      std::stop_token stop) override {
    log.add("backfill " + ns.coll);
    while (log.backfills_wait && !stop.stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    log.add("backfill " + ns.coll + (stop.stop_requested() ? " stopped" : " done"));
    return !stop.stop_requested();
  }

  fake_source& latest(const mapping::ns& ns) {
    std::lock_guard lock(mutex);
    for (auto it = sources.rbegin(); it != sources.rend(); ++it) {
      if (it->ns == ns) return *it->source;
    }
    ADD_FAILURE() << "no source for " << ns.full();
    std::abort();
  }
  std::size_t made_for(const mapping::ns& ns) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(
        std::count_if(sources.begin(), sources.end(), [&](const auto& m) { return m.ns == ns; }));
  }
  // A source is joined: no queue may be closed yet (stop_all joins every source first).
  void joined() {
    std::lock_guard lock(mutex);
    for (const auto& m : sources) {
      if (m.queue != nullptr && m.queue->closed()) ++queues_closed_before_a_join;
    }
  }
  // A source goes, its queue right after it.
  void forget(const fake_source* s) {
    std::lock_guard lock(mutex);
    for (auto& m : sources) {
      if (m.source == s) m.queue = nullptr;
    }
  }
  int queues_closed_before_a_join = 0;
  std::mutex mutex;

 private:
  fake_store store_{log};
};

fake_source::~fake_source() {
  request_stop();
  join();
  parts_.forget(this);
}

void fake_source::request_stop() {
  if (!thread_.joinable()) return;
  parts_.log.add("stop " + ns_.coll);
  thread_.request_stop();
}

void fake_source::join() {
  if (!thread_.joinable()) return;
  thread_.join();
  parts_.joined();
}

void fake_source::run(std::stop_token stop) {
  ready_ = true;
  while (true) {
    std::unique_lock lock(mutex_);
    if (!fed_.wait(lock, stop, [&] { return !inbox_.empty(); })) break;
    auto item = std::move(inbox_.front());
    inbox_.pop_front();
    lock.unlock();
    if (item) {
      if (!queue_.push(std::move(*item))) break;
      ++pushed_;
      continue;
    }
    parts_.log.add("resyncing " + ns_.coll);
    auto started = resync_(stop);
    lock.lock();
    resync_outcome_ = !started    ? "error"
                      : !*started ? "stopped"
                                  : "from " + std::to_string((*started)->from.t);
    if (started && *started) finished_ = (*started)->finished;
  }
  ready_ = false;
}

class supervisor_test : public ::testing::Test {
 protected:
  supervisor_test() : metrics_("test") {
    opts_.applier.linger = std::chrono::milliseconds(0);
    opts_.applier.checkpoint_interval = std::chrono::milliseconds(0);
    opts_.applier.max_backoff = std::chrono::milliseconds(10);
  }

  // Customers, then products, each with one event applied and checkpointed.
  void start_both_and_apply_one_each(supervisor& s) {
    s.start(customers, both_, {});
    s.start(products, both_, {});
    parts_.latest(customers).feed(rename(customers, "c1"));
    parts_.latest(products).feed(rename(products, "p1"));
    ASSERT_TRUE(parts_.log.wait_for("save customers c1"));
    ASSERT_TRUE(parts_.log.wait_for("save products p1"));
  }

  // Customers: c1 applied and stored, then history lost, the re-sync's backfill held
  // (backfills_wait), and c2 read and applied beside it.
  fake_source& apply_c1_lose_history_then_apply_c2(supervisor& s) {
    s.start(customers, both_, {});
    fake_source& src = parts_.latest(customers);
    src.feed(rename(customers, "c1"));
    EXPECT_TRUE(parts_.log.wait_for("save customers c1"));
    parts_.log.backfills_wait = true;
    src.feed(std::nullopt);  // history lost
    EXPECT_TRUE(parts_.log.wait_for("backfill customers"));
    src.feed(rename(customers, "c2"));
    EXPECT_TRUE(parts_.log.wait_for("apply customers 1 c2"));
    return src;
  }

  std::shared_ptr<const mapping::planner> both_ =
      planner_of({copy_mapping("customers", "name"), copy_mapping("products", "name")});
  fake_parts parts_;
  metrics::metrics metrics_;
  pipeline_options opts_;
};

TEST_F(supervisor_test, one_pipeline_stops_while_the_other_goes_on) {
  supervisor s(parts_, metrics_, opts_);
  ASSERT_NO_FATAL_FAILURE(start_both_and_apply_one_each(s));

  EXPECT_EQ(s.stop(customers), 1U);
  EXPECT_FALSE(s.status(customers).has_value());
  EXPECT_EQ(s.stop(customers), 0U);  // no longer listed

  parts_.latest(products).feed(rename(products, "p2"));
  EXPECT_TRUE(parts_.log.wait_for("apply products 1 p2"));
  EXPECT_TRUE(parts_.log.wait_for("save products p2"));
  ASSERT_TRUE(s.status(products).has_value());
  EXPECT_TRUE(s.status(products)->ready);
  EXPECT_EQ(s.stop_all(), 2U);
  EXPECT_FALSE(s.status(products)->ready);  // listed, stopped
}

TEST_F(supervisor_test, a_replacement_resumes_after_the_last_applied_item_with_its_planner) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  s.start(products, both_, {});
  parts_.latest(customers).feed(rename(customers, "c1"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c1"));  // "name" is copied: one write

  // The new snapshot copies only "email", which a rename does not touch.
  auto email_only =
      planner_of({copy_mapping("customers", "email"), copy_mapping("products", "name")});
  ASSERT_TRUE(s.replace(customers, email_only));
  EXPECT_FALSE(s.replace({"shop", "nothing"}, email_only));
  ASSERT_EQ(parts_.made_for(customers), 2U);
  {
    // Its filter differs (it watches email, not name): it starts at c1's time, skipping c1.
    std::lock_guard lock(parts_.mutex);
    const start_position& from = parts_.sources.back().from;
    EXPECT_FALSE(from.resume_after.has_value());
    EXPECT_TRUE(from.start_at.has_value());
    ASSERT_TRUE(from.gate.has_value());
    EXPECT_EQ(from.gate->others_after, "c1");
  }
  parts_.latest(customers).feed(rename(customers, "c1"));
  EXPECT_TRUE(parts_.log.wait_for("apply customers 0 c1"));  // seen again, skipped
  parts_.latest(customers).feed(rename(customers, "c2"));
  EXPECT_TRUE(parts_.log.wait_for("apply customers 0 c2"));  // planned with the new snapshot

  // The other pipeline was not touched and still runs.
  EXPECT_EQ(parts_.made_for(products), 1U);
  parts_.latest(products).feed(rename(products, "p1"));
  EXPECT_TRUE(parts_.log.wait_for("apply products 1 p1"));
  s.stop_all();
}

TEST_F(supervisor_test, a_gated_replay_plans_old_events_only_for_the_mapping_put_back) {
  // customers-name has applied up to c3; customers-name2 was put back and stopped at c1.
  auto two = planner_of({copy_mapping("customers", "name"),
                         R"({"name":"customers-name2","kind":"copy","source":{"collection":
    "customers"},"target":{"collection":"invoices","key":"customersId"},"into":"c",
    "fields":{"name":"name"}})"});
  supervisor s(parts_, metrics_, opts_);
  start_position from;
  from.resume_after = bson::document{{"_data", "c1"}};
  from.gate = mapping::replay_gate{"c3", {{"customers-name2", "c1"}}};
  s.start(customers, two, from);
  parts_.latest(customers).feed(rename(customers, "c2"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c2"));  // the returning mapping only
  parts_.latest(customers).feed(rename(customers, "c3"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c3"));
  ASSERT_TRUE(parts_.log.wait_for("save customers c3"));
  // Handed over before the replay is through: the next one goes on holding back.
  auto mid = s.hand_over(customers);
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(data_of(*mid->resume_after), "c3");
  ASSERT_TRUE(mid->gate.has_value());
  s.start(customers, two, std::move(*mid));
  parts_.latest(customers).feed(rename(customers, "c4"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 2 c4"));  // both, from here on
  auto after = s.hand_over(customers);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(data_of(*after->resume_after), "c4");
  EXPECT_FALSE(after->gate.has_value());             // through: nothing held back any more
  EXPECT_FALSE(s.hand_over(customers).has_value());  // no longer listed
}

TEST_F(supervisor_test,
       a_token_from_a_stream_with_another_filter_starts_at_its_time_behind_a_gate) {
  supervisor s(parts_, metrics_, opts_);
  const std::string now_filter = filter_text(both_->stream_filter(customers));
  ASSERT_NE(now_filter, "");
  start_position from;
  from.resume_after = bson::document{{"_data", "c1"}};
  from.token_time = bson::timestamp{5, 1};
  from.filter = "{\"f\":[]}";  // another filter
  s.start(customers, both_, from);
  {
    std::lock_guard lock(parts_.mutex);
    const start_position& made = parts_.sources.back().from;
    EXPECT_FALSE(made.resume_after.has_value());
    ASSERT_TRUE(made.start_at.has_value());
    EXPECT_EQ(made.start_at->t, 5u);
    ASSERT_TRUE(made.gate.has_value());
    EXPECT_EQ(made.gate->others_after, "c1");
  }
  // Starting at the token's time, the stream sees its event again: it is skipped.
  parts_.latest(customers).feed(rename(customers, "c1"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 0 c1"));
  parts_.latest(customers).feed(rename(customers, "c2"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c2"));
  // What it hands over names its filter and its last event's time.
  auto next = s.hand_over(customers);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(data_of(*next->resume_after), "c2");
  EXPECT_EQ(next->filter, now_filter);
  EXPECT_TRUE(next->token_time.has_value());
  // The same filter: it resumes after the token, as before.
  s.start(customers, both_, std::move(*next));
  {
    std::lock_guard lock(parts_.mutex);
    ASSERT_TRUE(parts_.sources.back().from.resume_after.has_value());
    EXPECT_EQ(data_of(*parts_.sources.back().from.resume_after), "c2");
    EXPECT_FALSE(parts_.sources.back().from.start_at.has_value());
  }
  s.stop_all();
}

TEST_F(supervisor_test, applied_through_is_the_lowest_time_of_the_streams_a_mapping_reads) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  s.start(products, both_, {});
  EXPECT_EQ(s.applied_through("customers-name"), (bson::timestamp{0, 0}));  // nothing yet
  EXPECT_FALSE(s.applied_through("nothing").has_value());
  parts_.latest(customers).feed(rename(customers, "c1", 50));
  parts_.latest(products).feed(rename(products, "p1", 40));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c1"));
  ASSERT_TRUE(parts_.log.wait_for("apply products 1 p1"));
  auto settled = [&](const std::string& name, std::uint32_t t) {
    for (int k = 0; k < 400; ++k) {
      if (s.applied_through(name) == bson::timestamp{t, 1}) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  EXPECT_TRUE(settled("customers-name", 50));
  EXPECT_TRUE(settled("products-name", 40));
  EXPECT_TRUE(settled("", 40));  // every mapping: the lowest
  s.stop_all();
}

TEST_F(supervisor_test, stored_positions_are_where_a_restart_resumes_each_stream) {
  supervisor s(parts_, metrics_, opts_);
  start_position from;
  from.start_at = bson::timestamp{42, 3};
  s.start(customers, both_, from);
  s.start(products, both_, {});  // from now: nothing is known until it stores a position
  using position = std::pair<std::string, bson::timestamp>;
  EXPECT_EQ(s.stored_positions(), (std::vector<position>{{"shop.customers", {42, 3}}}));
  parts_.latest(products).feed(rename(products, "p1", 60));
  ASSERT_TRUE(parts_.log.wait_for("save products p1"));
  const std::vector<position> both{{"shop.customers", {42, 3}}, {"shop.products", {60, 1}}};
  for (int k = 0; k < 400 && s.stored_positions() != both; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(s.stored_positions(), both);
  s.stop_all();
}

TEST_F(supervisor_test, a_resync_keeps_the_stored_position_before_the_lost_history) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  fake_source& src = parts_.latest(customers);
  src.feed(rename(customers, "c1", 50));
  ASSERT_TRUE(parts_.log.wait_for("save customers c1"));
  parts_.log.backfills_wait = true;
  src.feed(std::nullopt);  // history lost
  ASSERT_TRUE(parts_.log.wait_for("backfill customers"));
  src.feed(rename(customers, "c2", 70));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c2"));
  // A restart now would resume before the lost history (and re-sync again).
  using position = std::pair<std::string, bson::timestamp>;
  EXPECT_EQ(s.stored_positions(), (std::vector<position>{{"shop.customers", {50, 1}}}));
  parts_.log.backfills_wait = false;
  s.stop_all();
}

TEST_F(supervisor_test, a_replacement_of_a_pipeline_that_applied_nothing_starts_where_it_did) {
  supervisor s(parts_, metrics_, opts_);
  start_position from;
  from.start_at = bson::timestamp{42, 3};
  s.start(customers, both_, from);
  ASSERT_TRUE(s.replace(customers, both_));
  std::lock_guard lock(parts_.mutex);
  ASSERT_EQ(parts_.sources.size(), 2U);
  EXPECT_FALSE(parts_.sources.back().from.resume_after.has_value());
  ASSERT_TRUE(parts_.sources.back().from.start_at.has_value());
  EXPECT_EQ(parts_.sources.back().from.start_at->t, 42U);
}

TEST_F(supervisor_test, stop_all_joins_every_source_before_any_queue_closes_last_started_first) {
  supervisor s(parts_, metrics_, opts_);
  ASSERT_NO_FATAL_FAILURE(start_both_and_apply_one_each(s));
  EXPECT_EQ(s.stop_all(), 2U);
  EXPECT_EQ(parts_.queues_closed_before_a_join, 0);
  std::lock_guard lock(parts_.log.mutex);
  auto at = [&](const std::string& line) {
    return std::find(parts_.log.lines.begin(), parts_.log.lines.end(), line) -
           parts_.log.lines.begin();
  };
  EXPECT_LT(at("stop products"), at("stop customers"));
}

TEST_F(supervisor_test, a_resync_waits_until_everything_read_is_applied) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  fake_source& src = parts_.latest(customers);
  parts_.log.writes_fail = true;  // nothing is applied until the source asked for a re-sync
  src.feed(rename(customers, "c1"));
  src.feed(rename(customers, "c2"));
  src.feed(std::nullopt);  // history lost
  ASSERT_TRUE(parts_.log.wait_for("resyncing customers"));
  parts_.log.writes_fail = false;
  EXPECT_TRUE(parts_.log.wait_for("resync customers 2"))
      << "the re-sync ran before both events were applied";
  s.stop_all();
  EXPECT_EQ(src.resync_outcome(), "from 7");
}

TEST_F(supervisor_test, a_stop_while_a_resync_waits_ends_it_as_stopped) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  fake_source& src = parts_.latest(customers);
  parts_.log.writes_fail = true;  // c1 is never applied
  src.feed(rename(customers, "c1"));
  src.feed(std::nullopt);
  ASSERT_TRUE(parts_.log.wait_for("resyncing customers"));
  s.stop_all();
  EXPECT_EQ(src.resync_outcome(), "stopped");
  std::lock_guard lock(parts_.log.mutex);
  for (const auto& line : parts_.log.lines)
    EXPECT_FALSE(line.starts_with("resync ")) << line;
}

TEST_F(supervisor_test, a_resync_streams_beside_its_backfill_and_holds_checkpoints_until_done) {
  supervisor s(parts_, metrics_, opts_);
  fake_source* src = nullptr;
  ASSERT_NO_FATAL_FAILURE(src = &apply_c1_lose_history_then_apply_c2(s));
  EXPECT_EQ(src->resync_outcome(), "from 7");
  // The stream went on from the re-sync's time while the backfill runs...
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // quiet: a store would be due
  EXPECT_FALSE(parts_.log.has("save customers c2")) << "stored before the backfill finished";
  EXPECT_FALSE(src->resync_finished());
  // ...and its position is stored once the backfill is done.
  parts_.log.backfills_wait = false;
  EXPECT_TRUE(parts_.log.wait_for("backfill customers done"));
  EXPECT_TRUE(parts_.log.wait_for("save customers c2"));
  EXPECT_TRUE(src->resync_finished());
  s.stop_all();
}

TEST_F(supervisor_test, a_stop_during_a_resync_backfill_keeps_the_checkpoint_before_the_loss) {
  supervisor s(parts_, metrics_, opts_);
  fake_source* src = nullptr;
  ASSERT_NO_FATAL_FAILURE(src = &apply_c1_lose_history_then_apply_c2(s));
  s.stop_all();
  EXPECT_TRUE(parts_.log.has("backfill customers stopped"));
  EXPECT_FALSE(parts_.log.has("save customers c2"))
      << "a restart would skip what the unfinished backfill had not reached";
  EXPECT_FALSE(src->resync_finished());
}

TEST_F(supervisor_test, a_replacement_during_a_resync_starts_where_the_old_one_did) {
  supervisor s(parts_, metrics_, opts_);
  start_position from;
  from.start_at = bson::timestamp{42, 3};
  s.start(customers, both_, from);
  fake_source& src = parts_.latest(customers);
  src.feed(rename(customers, "c1"));
  ASSERT_TRUE(parts_.log.wait_for("apply customers 1 c1"));
  parts_.log.backfills_wait = true;
  src.feed(std::nullopt);
  ASSERT_TRUE(parts_.log.wait_for("backfill customers"));
  ASSERT_TRUE(s.replace(customers, both_));
  EXPECT_TRUE(parts_.log.has("backfill customers stopped"));
  std::lock_guard lock(parts_.mutex);
  ASSERT_EQ(parts_.sources.size(), 2U);
  EXPECT_FALSE(parts_.sources.back().from.resume_after.has_value());
  ASSERT_TRUE(parts_.sources.back().from.start_at.has_value());
  EXPECT_EQ(parts_.sources.back().from.start_at->t, 42U) << "it must re-sync again";
}

TEST_F(supervisor_test, a_second_loss_during_a_backfill_starts_a_new_one) {
  supervisor s(parts_, metrics_, opts_);
  s.start(customers, both_, {});
  fake_source& src = parts_.latest(customers);
  parts_.log.backfills_wait = true;
  src.feed(std::nullopt);
  ASSERT_TRUE(parts_.log.wait_for("backfill customers"));
  src.feed(std::nullopt);  // the stream lost its place again
  ASSERT_TRUE(parts_.log.wait_for("backfill customers stopped"));
  parts_.log.backfills_wait = false;
  EXPECT_TRUE(parts_.log.wait_for("backfill customers done"));
  s.stop_all();
  std::lock_guard lock(parts_.log.mutex);
  EXPECT_EQ(std::count(parts_.log.lines.begin(), parts_.log.lines.end(), "backfill customers"), 2);
}

}  // namespace
}  // namespace denormd::pipeline
