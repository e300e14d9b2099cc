// The checkpoint rule, with a writer and a checkpoint store that are fakes: a batch's token is
// stored only after its writes were acknowledged, whatever fails, retries or stops on the way.
#include "sink/applier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "bson/convert.h"
#include "bson/json.h"
#include "common/clock.h"
#include "config/mapping_loader.h"

namespace denormd::sink {
namespace {

const mapping::ns customers{"shop", "customers"};

std::vector<mapping::mapping> customer_mapping() {
  auto r = config::parse_mapping("test.json", R"({"name":"oc","kind":"copy",
    "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
    "into":"customer","fields":{"name":"name"}})",
                                 "shop");
  EXPECT_TRUE(r.has_value());
  return r ? std::move(r).value() : std::vector<mapping::mapping>{};
}

bson::document token(const std::string& data) {
  return bson::document{{"_data", data}};
}

std::string data_of(const bson::document& t) {
  const bson::value* d = t.get("_data");
  return d != nullptr && d->is_string() ? d->as_string() : "";
}

// A rename of a customer (1 unless said), as the watcher queues it.
source::stream_item rename(const std::string& data, std::int64_t wall_ms, int customer = 1) {
  const std::string id = std::to_string(customer);
  auto doc = bson::parse_json(R"({"_id":{"_data":")" + data +
                              R"("},"operationType":"update","ns":{"db":"shop","coll":"customers"},
    "documentKey":{"_id":)" + id +
                              R"(},"updateDescription":{"updatedFields":{"name":"n)" + data +
                              R"("},"removedFields":[]},"fullDocument":{"_id":)" + id +
                              R"(,"name":"n)" + data + R"("}})");
  EXPECT_TRUE(doc.has_value());
  source::stream_item item;
  bson::append_bytes(doc ? *doc : bson::document{}, item.event);
  item.token = token(data);
  item.event_ms = wall_ms;
  return item;
}

source::stream_item idle(const std::string& data) {
  return {{}, token(data), 0};
}

// What the fakes saw, in order, shared by both: "ack <token>" for each event token of an
// acknowledged batch, "save <token>" for each stored checkpoint.
struct journal {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> lines;
  std::vector<checkpoint::checkpoint> saved;
  int write_calls = 0;

  void add(std::string line) {
    std::lock_guard lock(mutex);
    lines.push_back(std::move(line));
    changed.notify_all();
  }
  // Bounded wait for a condition on the journal (held under its lock).
  bool wait(const std::function<bool()>& done) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), done);
  }
};

class fake_writer final : public batch_writer {
 public:
  explicit fake_writer(journal& j) : journal_(j) {}
  // Whether the batch with these event tokens fails (called with the journal locked).
  std::function<bool(const std::vector<std::string>&)> fails = [](const auto&) { return false; };
  // What a failing batch fails with.
  mongo::driver_error error{mongo::driver_error::origin::server, 91, "shutting down", {}};

  mongo::status apply(std::span<const mapping::write_op>,
                      std::span<const bson::document> event_tokens, const mapping::ns&) override {
    std::vector<std::string> tokens;
    for (const auto& t : event_tokens)
      tokens.push_back(data_of(t));
    std::unique_lock lock(journal_.mutex);
    ++journal_.write_calls;
    journal_.changed.notify_all();
    if (fails(tokens)) return mongo::failure(error);
    lock.unlock();
    for (const auto& t : tokens)
      journal_.add("ack " + t);
    return {};
  }

 private:
  journal& journal_;
};

class fake_store final : public checkpoint::position_store {
 public:
  explicit fake_store(journal& j) : journal_(j) {}
  mongo::result<std::optional<checkpoint::checkpoint>> load(const mapping::ns&) override {
    std::lock_guard lock(journal_.mutex);
    if (journal_.saved.empty()) return std::optional<checkpoint::checkpoint>{};
    return std::optional<checkpoint::checkpoint>(journal_.saved.back());
  }
  mongo::status save(const mapping::ns& source, const checkpoint::checkpoint& cp) override {
    EXPECT_EQ(source, customers);
    {
      std::lock_guard lock(journal_.mutex);
      journal_.saved.push_back(cp);
    }
    journal_.add("save " + data_of(cp.token));
    return {};
  }

 private:
  journal& journal_;
};

class applier_test : public ::testing::Test {
 protected:
  applier_test()
      : planner_(std::make_shared<const mapping::planner>(customer_mapping())),
        metrics_("test"),
        queue_(100, 1 << 20) {
    options_.source = customers;
    options_.max_backoff = std::chrono::milliseconds(200);
    options_.linger = std::chrono::milliseconds(0);
    options_.checkpoint_interval = std::chrono::milliseconds(0);
  }

  applier& start() {
    applier_ = std::make_unique<applier>(planner_, writer_, store_, queue_, metrics_, options_);
    applier_->start();
    return *applier_;
  }
  void stop() {
    queue_.close();
    applier_->request_stop();
    applier_->join();
  }
  bool saved(const std::string& data) {
    return journal_.wait([&] {
      return std::find(journal_.lines.begin(), journal_.lines.end(), "save " + data) !=
             journal_.lines.end();
    });
  }
  // Every stored event token was acknowledged before it was stored.
  void expect_no_save_before_its_ack(const std::set<std::string>& event_tokens) {
    std::lock_guard lock(journal_.mutex);
    std::set<std::string> acked;
    for (const auto& line : journal_.lines) {
      if (line.starts_with("ack ")) acked.insert(line.substr(4));
      const std::string t = line.starts_with("save ") ? line.substr(5) : "";
      if (event_tokens.contains(t)) {
        EXPECT_TRUE(acked.contains(t)) << "checkpoint " << t << " stored before its write";
      }
    }
  }

  std::shared_ptr<const mapping::planner> planner_;
  metrics::metrics metrics_;
  source::event_queue queue_;
  journal journal_;
  fake_writer writer_{journal_};
  fake_store store_{journal_};
  applier_options options_;
  std::unique_ptr<applier> applier_;
};

TEST_F(applier_test, a_failing_write_is_retried_and_its_token_is_stored_only_after_it_succeeds) {
  int failures_left = 2;
  writer_.fails = [&](const auto&) { return failures_left-- > 0; };
  start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(saved("e1"));
  stop();
  expect_no_save_before_its_ack({"e1"});
  std::lock_guard lock(journal_.mutex);
  EXPECT_EQ(journal_.write_calls, 3);
  EXPECT_EQ(journal_.saved.back().event_ms, 1000);
}

TEST_F(applier_test, a_write_refused_for_a_privilege_says_which_until_it_goes_through) {
  std::atomic<bool> refuse{true};
  writer_.error = mongo::driver_error{
      mongo::driver_error::origin::server,
      mongo::unauthorized_code,
      "not authorized on shop to execute command { update: \"orders\", updates: [] }",
      {}};
  writer_.fails = [&](const auto&) { return refuse.load(); };
  auto& a = start();
  EXPECT_EQ(a.refused(), "");
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(journal_.wait([&] { return journal_.write_calls >= 2; }));
  EXPECT_EQ(a.refused().rfind("cannot write the copies: the user's roles do not grant update on "
                              "shop.orders: not authorized on shop",
                              0),
            0U)
      << a.refused();
  EXPECT_NE(metrics_.serialize().find("denormd_errors_total{code=\"13\",stage=\"write\"}"),
            std::string::npos)
      << metrics_.serialize();
  refuse = false;
  ASSERT_TRUE(saved("e1"));
  EXPECT_EQ(a.refused(), "");
  stop();
}

TEST_F(applier_test, stopping_while_a_write_fails_stores_no_checkpoint_past_that_batch) {
  writer_.fails = [](const std::vector<std::string>& tokens) {
    return std::find(tokens.begin(), tokens.end(), "e2") != tokens.end();
  };
  options_.checkpoint_interval = std::chrono::hours(1);  // only quiet and stop store
  start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(saved("e1"));
  ASSERT_TRUE(queue_.push(rename("e2", 2000)));
  ASSERT_TRUE(queue_.push(idle("t3")));  // read while the write of e2 is retried
  ASSERT_TRUE(journal_.wait([&] { return journal_.write_calls >= 3; }));  // e1, e2 failing twice
  stop();
  expect_no_save_before_its_ack({"e1", "e2"});
  std::lock_guard lock(journal_.mutex);
  for (const auto& cp : journal_.saved) {
    EXPECT_NE(data_of(cp.token), "e2");
    EXPECT_NE(data_of(cp.token), "t3");
  }
  EXPECT_EQ(data_of(journal_.saved.back().token), "e1");
  EXPECT_EQ(applier_->applied_events(), 1U);
}

TEST_F(applier_test, token_only_checkpoints_keep_the_wall_time_of_the_last_event) {
  start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(saved("e1"));
  ASSERT_TRUE(queue_.push(idle("t2")));  // the source is quiet: only a newer token
  ASSERT_TRUE(saved("t2"));
  ASSERT_TRUE(queue_.push(idle("t3")));
  stop();  // the last token-only item is stored on the way out
  std::lock_guard lock(journal_.mutex);
  ASSERT_EQ(data_of(journal_.saved.back().token), "t3");
  for (const auto& cp : journal_.saved)
    EXPECT_EQ(cp.event_ms, 1000) << data_of(cp.token);
}

TEST_F(applier_test, wait_until_completed_returns_once_the_items_are_applied) {
  applier& a = start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(queue_.push(idle("t2")));
  std::stop_source never;
  ASSERT_TRUE(a.wait_until_completed(2, never.get_token()));
  EXPECT_GE(a.completed_items(), 2U);
  stop();
  ASSERT_TRUE(a.applied_position().has_value());
  EXPECT_EQ(data_of(a.applied_position()->token), "t2");
}

TEST_F(applier_test, wait_until_completed_ends_on_a_stop_request) {
  writer_.fails = [](const auto&) { return true; };  // e1 is never applied
  applier& a = start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  std::stop_source stop_waiting;
  std::thread stopper([&] {
    journal_.wait([&] { return journal_.write_calls >= 1; });
    stop_waiting.request_stop();
  });
  EXPECT_FALSE(a.wait_until_completed(1, stop_waiting.get_token()));
  stopper.join();
  stop();
  EXPECT_FALSE(a.applied_position().has_value());
}

TEST_F(applier_test, a_dry_run_stores_no_checkpoint) {
  options_.dry_run = true;
  start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(queue_.push(idle("t2")));
  ASSERT_TRUE(journal_.wait([&] { return journal_.write_calls >= 1; }));
  stop();
  EXPECT_EQ(applier_->applied_events(), 1U);
  std::lock_guard lock(journal_.mutex);
  EXPECT_TRUE(journal_.saved.empty());
}

TEST_F(applier_test, lag_is_the_stored_checkpoints_age_until_the_stream_is_read) {
  options_.initial_checkpoint_ms = 50'000;
  applier& a = start();
  // Nothing read yet: not caught up, the stored position is 60 s old.
  EXPECT_DOUBLE_EQ(a.lag_seconds(110'000), 60.0);
  ASSERT_TRUE(queue_.push(idle("t1")));  // the stream answered: nothing newer
  ASSERT_TRUE(saved("t1"));
  EXPECT_DOUBLE_EQ(a.lag_seconds(110'000), 0.0);
  stop();
}

TEST_F(applier_test, lag_counts_from_the_start_time_until_a_replay_reads) {
  options_.start_at_ms = 80'000;  // --start-at, no checkpoint
  applier& a = start();
  EXPECT_DOUBLE_EQ(a.lag_seconds(110'000), 30.0);
  ASSERT_TRUE(queue_.push(idle("t1")));
  ASSERT_TRUE(saved("t1"));
  EXPECT_DOUBLE_EQ(a.lag_seconds(110'000), 0.0);
  stop();
}

TEST_F(applier_test, lag_while_a_write_fails_is_the_age_of_the_event_being_written) {
  writer_.fails = [](const auto&) { return true; };
  options_.initial_checkpoint_ms = 50'000;
  applier& a = start();
  ASSERT_TRUE(queue_.push(rename("e1", 100'000)));
  ASSERT_TRUE(journal_.wait([&] { return journal_.write_calls >= 1; }));
  EXPECT_DOUBLE_EQ(a.lag_seconds(110'000), 10.0);
  stop();
  std::lock_guard lock(journal_.mutex);
  EXPECT_TRUE(journal_.saved.empty());
}

TEST_F(applier_test, nothing_is_written_or_stored_past_the_lease_deadline) {
  auto deadline = std::make_shared<std::atomic<std::int64_t>>(0);  // lost (or not yet renewed)
  options_.lease_deadline = deadline;
  options_.lease_epoch = 5;
  start();
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  {
    std::lock_guard lock(journal_.mutex);
    EXPECT_EQ(journal_.write_calls, 0);
    EXPECT_TRUE(journal_.saved.empty());
  }
  EXPECT_NE(metrics_.serialize().find("code=\"lease_expired\""), std::string::npos);
  // Renewed: the batch goes out, and its checkpoint carries the lease's epoch.
  *deadline = steady_ms() + 60000;
  ASSERT_TRUE(saved("e1"));
  stop();
  std::lock_guard lock(journal_.mutex);
  EXPECT_EQ(journal_.saved.back().lease_epoch, 5);
}

// A writer that takes a fence (open) and may fail part-way through a batch: records the
// customers each call wrote, and the calls to open().
class fencing_writer final : public batch_writer {
 public:
  std::int64_t claimed_epoch = 9;    // what open(0) claims
  std::vector<std::int64_t> opened;  // the epochs open() was called with
  // Per call of apply(), in order: how many ops it writes for good before failing (none: all).
  std::vector<std::optional<std::size_t>> plan;
  std::optional<mongo::driver_error> open_error;
  // From this call of apply() on, `moved_calls` calls find the fence moved (another writer).
  std::optional<std::size_t> moved_at_call;
  std::size_t moved_calls = 1000;
  std::function<void(std::size_t call)> on_call;  // called first in each apply(), unlocked
  std::mutex mutex;
  std::vector<std::vector<std::int32_t>> calls;  // the merge keys each call was given

  mongo::result<std::int64_t> open(std::int64_t epoch) override {
    std::lock_guard lock(mutex);
    opened.push_back(epoch);
    if (open_error) return mongo::failure(*open_error);
    return epoch != 0 ? epoch : claimed_epoch;
  }
  mongo::status apply(std::span<const mapping::write_op> ops, std::span<const bson::document>,
                      const mapping::ns&) override {
    if (on_call) on_call(calls.size());
    std::lock_guard lock(mutex);
    std::vector<std::int32_t> keys;
    for (const auto& op : ops)
      keys.push_back(op.merge_key.as<std::int32_t>());
    const std::size_t n = calls.size();
    calls.push_back(keys);
    committed_ = 0;
    if (moved_at_call && n >= *moved_at_call && n < *moved_at_call + moved_calls) {
      return mongo::failure(mongo::driver_error{
          mongo::driver_error::origin::client, mongo::lease_moved_code, "moved", {}});
    }
    if (n < plan.size() && plan[n]) {
      committed_ = *plan[n];
      return mongo::failure(mongo::driver_error{mongo::driver_error::origin::server,
                                                112,
                                                "WriteConflict",
                                                {"TransientTransactionError"}});
    }
    return {};
  }
  std::size_t committed() const override { return committed_; }

 private:
  std::size_t committed_ = 0;
};

class applier_fence_test : public applier_test {
 protected:
  // Queues renames of customers 0..n-1 (e0..) before the applier starts: one batch.
  void queue_renames(int n) {
    for (int c = 0; c < n; ++c)
      ASSERT_TRUE(queue_.push(rename("e" + std::to_string(c), 1000 + c, c)));
  }
  applier& start_with(batch_writer& w) {
    applier_ = std::make_unique<applier>(planner_, w, store_, queue_, metrics_, options_);
    applier_->start();
    return *applier_;
  }
  double metric(const std::string& series) const {
    const std::string text = metrics_.serialize();
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
  }

  fencing_writer fw_;
};

TEST_F(applier_fence_test, the_writer_takes_the_fence_first_and_checkpoints_carry_its_epoch) {
  queue_renames(1);
  start_with(fw_);
  ASSERT_TRUE(saved("e0"));
  stop();
  std::lock_guard lock(journal_.mutex);
  EXPECT_EQ(fw_.opened, (std::vector<std::int64_t>{0}));  // no lease: claim one
  EXPECT_EQ(journal_.saved.back().lease_epoch, 9);
}

TEST_F(applier_fence_test, a_batch_cut_short_is_retried_after_what_was_written_for_good) {
  fw_.plan = {std::size_t{3}, std::size_t{2}};  // 3 of 10 written, then 2 of the 7 left
  queue_renames(10);
  start_with(fw_);
  ASSERT_TRUE(saved("e9"));
  stop();
  ASSERT_EQ(fw_.calls.size(), 3u);
  EXPECT_EQ(fw_.calls[0], (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(fw_.calls[1], (std::vector<std::int32_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(fw_.calls[2], (std::vector<std::int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(applier_->applied_events(), 10u);
  EXPECT_EQ(metric(R"(denormd_batch_attempts{source="shop.customers"})"), 0);
}

TEST_F(applier_fence_test, a_batch_failing_five_times_in_a_row_is_counted_once_and_retried) {
  fw_.plan.assign(7, std::size_t{0});  // 7 failures, then it goes through
  double attempts_before_the_sixth = -1;
  fw_.on_call = [&](std::size_t n) {
    if (n == 5)
      attempts_before_the_sixth = metric(R"(denormd_batch_attempts{source="shop.customers"})");
  };
  queue_renames(1);
  start_with(fw_);
  ASSERT_TRUE(saved("e0"));
  EXPECT_EQ(attempts_before_the_sixth, 5);
  stop();
  EXPECT_EQ(metric(R"(denormd_stuck_batches_total{source="shop.customers",stage="write"})"), 1);
  EXPECT_EQ(metric(R"(denormd_batch_attempts{source="shop.customers"})"), 0);
}

TEST_F(applier_fence_test, fenced_out_without_a_lease_it_says_so_once_and_stores_nothing) {
  std::atomic<int> told = 0;
  options_.fenced_out = [&](const mongo::driver_error& e) {
    EXPECT_EQ(e.code, mongo::lease_moved_code);
    journal_.add("fenced out");
    ++told;
  };
  start_with(fw_);
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(saved("e1"));
  {
    std::lock_guard lock(fw_.mutex);
    fw_.moved_at_call = fw_.calls.size();  // another writer claims the fence now
  }
  ASSERT_TRUE(queue_.push(rename("e2", 2000)));
  ASSERT_TRUE(journal_.wait([&] {
    return std::find(journal_.lines.begin(), journal_.lines.end(), "fenced out") !=
           journal_.lines.end();
  }));
  ASSERT_TRUE(queue_.push(rename("e3", 3000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop();
  EXPECT_EQ(told.load(), 1);
  std::lock_guard lock(fw_.mutex);
  EXPECT_EQ(fw_.calls.size(), 2u);  // e2 tried once, e3 never
  std::lock_guard jlock(journal_.mutex);
  EXPECT_EQ(data_of(journal_.saved.back().token), "e1");
}

TEST_F(applier_fence_test, under_a_lease_a_moved_fence_is_retried_until_the_pipeline_stops) {
  std::atomic<int> told = 0;
  options_.fenced_out = [&](const mongo::driver_error&) { ++told; };
  options_.lease_epoch = 4;
  options_.lease_deadline = std::make_shared<std::atomic<std::int64_t>>(steady_ms() + 60000);
  fw_.moved_at_call = 0;
  fw_.moved_calls = 2;
  start_with(fw_);
  ASSERT_TRUE(queue_.push(rename("e1", 1000)));
  ASSERT_TRUE(saved("e1"));
  stop();
  EXPECT_EQ(told.load(), 0);
  std::lock_guard lock(fw_.mutex);
  EXPECT_EQ(fw_.opened, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(fw_.calls.size(), 3u);
}

}  // namespace
}  // namespace denormd::sink