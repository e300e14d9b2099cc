#pragma once
// A document_store over in-memory collections, for the kinds' completion tests: find and
// find_one match the filter with the test server's query engine (sort and limit are the
// caller's to check: the fake returns documents in insertion order), update_one records the
// write. Any call can be made to fail from the n-th on.

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bson/json.h"
#include "mapping/document_store.h"
#include "mapping/write_op.h"
#include "query_operators.h"

namespace denormd::mapping::testing {

class fake_store final : public document_store {
 public:
  struct write {
    std::string filter;
    std::string update;
  };

  void add(const std::string& collection, const std::string& json) {
    collections_[collection].push_back(*bson::parse_json(json));
  }
  // Calls after the first `n` fail.
  void fail_after(int n) { calls_left_ = n; }
  // Replaces every document of `collection` with `json` (a change made meanwhile).
  void replace_all(const std::string& collection, const std::string& json) {
    collections_[collection] = {*bson::parse_json(json)};
  }

  std::optional<std::vector<bson::document>> find(const ns& where, const bson::document& filter,
                                                  const read_options& opts) override {
    if (!take_call()) return std::nullopt;
    ++finds;
    last_sort = bson::to_json(opts.sort);
    last_limit = opts.limit;
    auto found = matching(where, filter);
    // Documents are added in _id order where a test pages through them.
    if (honor_limit && opts.limit > 0 && found.size() > static_cast<std::size_t>(opts.limit))
      found.resize(static_cast<std::size_t>(opts.limit));
    read_done();
    return found;
  }
  std::optional<std::optional<bson::document>> find_one(const ns& where,
                                                        const bson::document& filter) override {
    if (!take_call()) return std::nullopt;
    ++finds;
    auto all = matching(where, filter);
    std::optional<bson::document> first;
    if (!all.empty()) first = all.front();
    read_done();
    return first;
  }
  // Runs the aggregate kind's pipeline shape: a $match (its equalities and $in lists, as
  // the other reads) and a $group by one field with $sum/$avg/$min/$max over numbers.
  std::optional<std::vector<bson::document>> aggregate(const ns& where,
                                                       const bson::array& pipeline) override {
    if (!take_call()) return std::nullopt;
    ++aggregates;
    last_pipeline = bson::to_json(pipeline);
    const auto& match = pipeline.at(0).as_document().get("$match")->as_document();
    const auto& group = pipeline.at(1).as_document().get("$group")->as_document();
    std::vector<bson::document> out;
    for (const auto& d : matching(where, match)) {
      const std::string key_path = group.get("_id")->as_string().substr(1);
      const bson::value* key = d.find_path(key_path);
      const bson::value k = key != nullptr ? *key : bson::value{};
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const bson::document& g) { return *g.get("_id") == k; });
      if (it == out.end()) {
        out.push_back(bson::document{{"_id", k}});
        it = out.end() - 1;
      }
      for (const auto& acc : group) {
        if (acc.name == "_id") continue;
        accumulate(*it, acc.name, acc.val.as_document().fields().front(), d);
      }
    }
    for (auto& g : out) {
      for (auto& f : g.fields()) {
        if (f.val.is_document()) {  // an average in progress: {s, n}
          const auto& a = f.val.as_document();
          f.val = a.get("n")->as<std::int64_t>() == 0
                      ? bson::value{}
                      : bson::value(a.get("s")->as<double>() /
                                    static_cast<double>(a.get("n")->as<std::int64_t>()));
        }
      }
    }
    return out;
  }
  // The same, at the time `snapshot_at` says.
  std::optional<snapshot> aggregate_snapshot(const ns& where,
                                             const bson::array& pipeline) override {
    auto docs = aggregate(where, pipeline);
    if (!docs) return std::nullopt;
    return snapshot{std::move(*docs), snapshot_at};
  }
  // One round trip for all of them (`bulks` counts them); each is then as update_one.
  std::optional<std::vector<store_write>> update_each(
      const write_op& op, const std::vector<single_update>& updates) override {
    ++bulks;
    std::vector<store_write> out;
    for (const auto& u : updates) {
      const store_write w = update_one(op, u.filter, u.update, u.array_filters);
      if (w == store_write::failed) return std::nullopt;
      out.push_back(w);
    }
    return out;
  }
  store_write update_one(const write_op& /*op*/, const bson::document& filter,
                         const bson::document& update, const bson::array& /*af*/) override {
    if (!take_call()) return store_write::failed;
    writes.push_back({bson::to_json(filter), bson::to_json(update)});
    if (after_first_write) {
      after_first_write();
      after_first_write = nullptr;
    }
    return store_write::applied;
  }

  std::vector<write> writes;
  int finds = 0;
  int aggregates = 0;
  int bulks = 0;
  std::string last_pipeline;
  bson::timestamp snapshot_at{100, 1};
  bool honor_limit = false;  // find returns at most `limit` documents
  std::string last_sort;
  int last_limit = 0;
  std::function<void()> after_first_read;   // runs once, after the first find or find_one
  std::function<void()> after_first_write;  // runs once, after the first update_one

 private:
  // int32 sums and doubles only: the server's type rules are the emulator's to test.
  static void accumulate(bson::document& g, const std::string& name, const bson::field& op,
                         const bson::document& d) {
    const bson::value* v = op.val.is_string() ? d.find_path(op.val.as_string().substr(1)) : &op.val;
    bson::value* have = g.get(name);
    if (op.name == "$sum") {
      if (have == nullptr) have = &g.set(name, 0);
      if (v != nullptr && v->is_number()) {
        *have = v->kind() == bson::type::int32 && have->kind() == bson::type::int32
                    ? bson::value(have->as<std::int32_t>() + v->as<std::int32_t>())
                    : bson::value(have->to_double() + v->to_double());
      }
    } else if (op.name == "$avg") {
      if (have == nullptr) have = &g.set(name, bson::document{{"s", 0.0}, {"n", std::int64_t{0}}});
      if (v != nullptr && v->is_number()) {
        auto& a = have->as_document();
        a.set("s", a.get("s")->as<double>() + v->to_double());
        a.set("n", a.get("n")->as<std::int64_t>() + 1);
      }
    } else {  // $min, $max
      if (have == nullptr) have = &g.set(name, bson::value{});
      if (v == nullptr || v->is_null()) return;
      const int c = have->is_null() ? 0 : bson::compare(*v, *have);
      if (have->is_null() || (op.name == "$min" ? c < 0 : c > 0)) *have = *v;
    }
  }
  bool take_call() { return calls_left_ < 0 || calls_left_-- > 0; }
  void read_done() {
    if (after_first_read) {
      after_first_read();
      after_first_read = nullptr;
    }
  }
  // The test server's query engine decides, as MongoDB would.
  std::vector<bson::document> matching(const ns& where, const bson::document& filter) {
    std::vector<bson::document> out;
    auto m = mongo_emulator::engine::compile_query(filter);
    EXPECT_TRUE(m) << bson::to_json(filter) << ": " << m.error().message;
    if (!m) return out;
    for (const auto& d : collections_[where.coll]) {
      if (m->matches(d)) out.push_back(d);
    }
    return out;
  }

  std::map<std::string, std::vector<bson::document>> collections_;
  int calls_left_ = -1;
};

}  // namespace denormd::mapping::testing
