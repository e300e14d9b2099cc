#pragma once
// A document_store over in-memory collections, for the kinds' completion tests: find and
// find_one match the filter's equalities (sort and limit are the caller's to check: the fake
// returns documents in insertion order), update_one records the write. Any call can be made
// to fail from the n-th on.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bson/json.h"
#include "mapping/document_store.h"
#include "mapping/write_op.h"

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
    return matching(where, filter);
  }
  std::optional<std::optional<bson::document>> find_one(const ns& where,
                                                        const bson::document& filter) override {
    if (!take_call()) return std::nullopt;
    ++finds;
    auto all = matching(where, filter);
    std::optional<bson::document> first;
    if (!all.empty()) first = all.front();
    if (after_first_read) {
      after_first_read();
      after_first_read = nullptr;
    }
    return first;
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
  std::string last_sort;
  int last_limit = 0;
  std::function<void()> after_first_read;   // runs once, after the first find_one
  std::function<void()> after_first_write;  // runs once, after the first update_one

 private:
  bool take_call() { return calls_left_ < 0 || calls_left_-- > 0; }
  // Only the equalities of a filter ({f: {$eq: v}}, also inside $and) decide; the rest is
  // what the planner's tests check.
  static bool equal_parts_match(const bson::document& d, const bson::document& filter) {
    for (const auto& f : filter) {
      if (f.name == "$and") {
        for (const auto& part : f.val.as_array()) {
          if (!equal_parts_match(d, part.as_document())) return false;
        }
        continue;
      }
      if (!f.val.is_document()) continue;
      const bson::value* want = f.val.as_document().get("$eq");
      const bson::value* have = d.find_path(f.name);
      if (want != nullptr && (have == nullptr || !(*have == *want))) return false;
    }
    return true;
  }
  std::vector<bson::document> matching(const ns& where, const bson::document& filter) {
    std::vector<bson::document> out;
    for (const auto& d : collections_[where.coll]) {
      if (equal_parts_match(d, filter)) out.push_back(d);
    }
    return out;
  }

  std::map<std::string, std::vector<bson::document>> collections_;
  int calls_left_ = -1;
};

}  // namespace denormd::mapping::testing
