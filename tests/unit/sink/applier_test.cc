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

  mongo::status apply(std::span<const mapping::write_op>,
                      std::span<const bson::document> event_tokens, const mapping::ns&) override {
    std::vector<std::string> tokens;
    for (const auto& t : event_tokens)
      tokens.push_back(data_of(t));
    std::unique_lock lock(journal_.mutex);
    ++journal_.write_calls;
    journal_.changed.notify_all();
    if (fails(tokens)) {
      return mongo::failure(
          mongo::driver_error{mongo::driver_error::origin::server, 91, "shutting down", {}});
    }
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

  applier& start(std::vector<batch_writer*> writers = {}) {
    if (writers.empty()) writers.push_back(&writer_);
    applier_ =
        std::make_unique<applier>(planner_, std::move(writers), store_, queue_, metrics_, options_);
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

// One of several writers of an applier: records the customers each call wrote ("ack" lines
// for its tokens once all groups are in), and can wait for its peers to be writing too.
class group_writer final : public batch_writer {
 public:
  group_writer(journal& j, int index, std::atomic<int>& writing)
      : journal_(j), index_(index), writing_(writing) {}
  std::atomic<int> peers = 1;  // how many writers to wait for inside apply() (1: none)
  std::atomic<int> failures_left = 0;
  std::atomic<bool> overlapped = false;  // a call saw all its peers inside apply() at once
  std::atomic<int> calls = 0;
  std::mutex mutex;
  std::vector<std::int32_t> customers;  // the merge keys written, in order

  mongo::status apply(std::span<const mapping::write_op> ops, std::span<const bson::document>,
                      const mapping::ns&) override {
    ++calls;
    ++writing_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (writing_.load() < peers.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (writing_.load() >= peers.load()) overlapped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let peers see this one
    --writing_;
    if (failures_left.fetch_sub(1) > 0) {
      return mongo::failure(
          mongo::driver_error{mongo::driver_error::origin::server, 91, "shutting down", {}});
    }
    std::lock_guard lock(mutex);
    for (const auto& op : ops)
      customers.push_back(op.merge_key.as<std::int32_t>());
    journal_.add("writer " + std::to_string(index_) + " wrote " + std::to_string(ops.size()));
    return {};
  }

 private:
  journal& journal_;
  const int index_;
  std::atomic<int>& writing_;
};

class applier_groups_test : public applier_test {
 protected:
  // Queues renames of customers 0..n-1 (e0..) before the applier starts: one batch.
  void queue_renames(int n) {
    for (int c = 0; c < n; ++c)
      ASSERT_TRUE(queue_.push(rename("e" + std::to_string(c), 1000 + c, c)));
  }
  std::vector<batch_writer*> both() { return {&w0_, &w1_}; }

  std::atomic<int> writing_ = 0;
  group_writer w0_{journal_, 0, writing_};
  group_writer w1_{journal_, 1, writing_};
};

TEST_F(applier_groups_test, a_large_batch_is_split_over_the_writers_written_at_once_then_stored) {
  options_.min_split_ops = 8;
  w0_.peers = 2;
  w1_.peers = 2;
  queue_renames(40);
  start(both());
  ASSERT_TRUE(saved("e39"));
  stop();
  EXPECT_EQ(w0_.calls.load(), 1);
  EXPECT_EQ(w1_.calls.load(), 1);
  EXPECT_TRUE(w0_.overlapped && w1_.overlapped) << "the groups were written one after the other";
  // Every customer written once, by one writer.
  std::vector<std::int32_t> all = w0_.customers;
  all.insert(all.end(), w1_.customers.begin(), w1_.customers.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 40u);
  for (std::int32_t c = 0; c < 40; ++c)
    EXPECT_EQ(all[static_cast<std::size_t>(c)], c);
  EXPECT_FALSE(w0_.customers.empty());
  EXPECT_FALSE(w1_.customers.empty());
  // The checkpoint came after both groups.
  std::lock_guard lock(journal_.mutex);
  const auto at = [&](const std::string& line) {
    return std::find(journal_.lines.begin(), journal_.lines.end(), line) - journal_.lines.begin();
  };
  const auto save = at("save e39");
  EXPECT_LT(at("writer 0 wrote " + std::to_string(w0_.customers.size())), save);
  EXPECT_LT(at("writer 1 wrote " + std::to_string(w1_.customers.size())), save);
  EXPECT_EQ(applier_->applied_events(), 40u);
}

TEST_F(applier_groups_test, only_the_group_that_failed_is_written_again) {
  options_.min_split_ops = 8;
  w1_.failures_left = 2;
  queue_renames(40);
  start(both());
  ASSERT_TRUE(saved("e39"));
  stop();
  EXPECT_EQ(w0_.calls.load(), 1);
  EXPECT_EQ(w1_.calls.load(), 3);
  EXPECT_EQ(w0_.customers.size() + w1_.customers.size(), 40u);
  std::lock_guard lock(journal_.mutex);
  // Nothing was stored before the failed group was written at last.
  const auto first_save = std::find_if(journal_.lines.begin(), journal_.lines.end(),
                                       [](const auto& l) { return l.starts_with("save "); });
  EXPECT_LT(std::find(journal_.lines.begin(), journal_.lines.end(),
                      "writer 1 wrote " + std::to_string(w1_.customers.size())),
            first_save);
}

TEST_F(applier_groups_test, stopping_while_one_group_fails_stores_nothing_of_that_batch) {
  options_.min_split_ops = 8;
  w1_.failures_left = 1000;
  queue_renames(40);
  start(both());
  ASSERT_TRUE(journal_.wait([&] { return w1_.calls.load() >= 2; }));
  stop();
  EXPECT_EQ(w0_.calls.load(), 1);
  std::lock_guard lock(journal_.mutex);
  EXPECT_TRUE(journal_.saved.empty());
  EXPECT_EQ(applier_->applied_events(), 0u);
  EXPECT_FALSE(applier_->applied_position().has_value());
}

TEST_F(applier_groups_test, a_small_batch_is_written_by_one_writer) {
  queue_renames(5);  // fewer ops than the default min_split_ops
  start(both());
  ASSERT_TRUE(saved("e4"));
  stop();
  EXPECT_EQ(w0_.calls.load(), 1);
  EXPECT_EQ(w1_.calls.load(), 0);
  EXPECT_EQ(w0_.customers.size(), 5u);
}

}  // namespace
}  // namespace denormd::sink
