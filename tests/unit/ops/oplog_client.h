#pragma once
// A document client that answers only finds on local.oplog.rs, as MongoDB does for the read
// oplog_window.h makes: the oldest scripted entry's {ts}, or the scripted failure. It records
// the last find. Thread-safe (the history probe reads it from its own thread).

#include <gtest/gtest.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mongo/document_client.h"

namespace denormd::ops::testing {

class oplog_client final : public mongo::document_client {
 public:
  // The oldest entry's ts (none: an empty oplog), or a failure of every read.
  void keep(std::optional<bson::timestamp> oldest) {
    std::lock_guard lock(mutex_);
    oldest_ = oldest;
    fail_.reset();
  }
  void refuse(mongo::driver_error e) {
    std::lock_guard lock(mutex_);
    fail_ = std::move(e);
  }
  int finds() {
    std::lock_guard lock(mutex_);
    return finds_;
  }
  struct last_find {
    std::string ns;
    bson::document filter;
    bson::document sort;
    bson::document projection;
    std::int64_t limit = 0;
  };
  last_find last() {
    std::lock_guard lock(mutex_);
    return last_;
  }

  mongo::result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                                  const bson::document& filter,
                                                  const mongo::find_options& opts) override {
    std::lock_guard lock(mutex_);
    ++finds_;
    last_ = {db + "." + coll, filter, opts.sort, opts.projection, opts.limit};
    if (fail_) return mongo::failure(*fail_);
    std::vector<bson::document> out;
    if (oldest_) out.push_back(bson::document{{"ts", *oldest_}});
    return out;
  }

  mongo::result<mongo::bulk_outcome> update_bulk(const std::string&, const std::string&,
                                                 std::span<const mongo::write_request>,
                                                 bool) override {
    return unexpected_call<mongo::bulk_outcome>();
  }
  mongo::status insert_one(const std::string&, const std::string&, const bson::document&) override {
    ADD_FAILURE() << "the oplog is only read";
    return {};
  }
  mongo::status find_each(const std::string&, const std::string&, const bson::document&,
                          const mongo::find_options&,
                          const std::function<bool(bson::document&&)>&) override {
    ADD_FAILURE() << "the oplog is read with one find";
    return {};
  }
  mongo::result<std::optional<bson::document>> find_one(const std::string&, const std::string&,
                                                        const bson::document&) override {
    return unexpected_call<std::optional<bson::document>>();
  }
  mongo::result<std::vector<bson::document>> aggregate(const std::string&, const std::string&,
                                                       const bson::array&) override {
    return unexpected_call<std::vector<bson::document>>();
  }
  mongo::result<snapshot_results> aggregate_snapshot(const std::string&, const std::string&,
                                                     const bson::array&) override {
    return unexpected_call<snapshot_results>();
  }

 private:
  template <class T>
  mongo::result<T> unexpected_call() {
    ADD_FAILURE() << "the oplog is read with one find";
    return T{};
  }

  std::mutex mutex_;
  std::optional<bson::timestamp> oldest_;
  std::optional<mongo::driver_error> fail_;
  int finds_ = 0;
  last_find last_;
};

inline mongo::driver_error unauthorized() {
  return mongo::driver_error{mongo::driver_error::origin::server,
                             13,
                             "not authorized on local to execute command { find: \"oplog.rs\" }",
                             {}};
}

}  // namespace denormd::ops::testing
