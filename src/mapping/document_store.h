#pragma once
// What a kind's completion may do to the database: the reads a fill or refill needs and the
// single-document writes it makes. Declared here so the kinds stay pure and testable with a
// fake; the sink implements it over the driver. A call that fails returns nullopt / failed
// and the implementation keeps why: the completion stops and its caller returns that error.

#include <optional>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/failing_child.h"
#include "mapping/ns.h"

namespace denormd::mapping {

struct write_op;

struct read_options {
  bson::document projection;  // empty: whole documents
  bson::document sort;
  int limit = 0;  // 0: no limit
};

enum class store_write {
  applied,  // acknowledged
  refused,  // refused for good by the server; stored as a dead letter of `op`, going on
  failed    // not applied; the completion stops and the batch is retried
};

class document_store {
 public:
  virtual ~document_store() = default;
  virtual std::optional<std::vector<bson::document>> find(const ns& where,
                                                          const bson::document& filter,
                                                          const read_options& opts) = 0;
  // The first document matching `filter`; the inner nullopt when there is none.
  virtual std::optional<std::optional<bson::document>> find_one(const ns& where,
                                                                const bson::document& filter) = 0;
  // The results of an aggregation pipeline over `where`.
  virtual std::optional<std::vector<bson::document>> aggregate(const ns& where,
                                                               const bson::array& pipeline) = 0;
  // The same read at one point in time, and that time: the results hold every write at or
  // before `at` and none after.
  struct snapshot {
    std::vector<bson::document> docs;
    bson::timestamp at;
  };
  virtual std::optional<snapshot> aggregate_snapshot(const ns& where,
                                                     const bson::array& pipeline) = 0;
  // Single-document updates made on behalf of `op`, in as few round trips as the store can:
  // one result per update (applied or refused), or nullopt when the store failed.
  struct single_update {
    bson::document filter;
    bson::document update;
    bson::array array_filters;
    const write_op* op = nullptr;  // made on behalf of this op, when not the call's
  };
  virtual std::optional<std::vector<store_write>> update_each(
      const write_op& op, const std::vector<single_update>& updates) = 0;
  // When the last call that failed was refused because of the data it read (a computed
  // field's expression failing on a document, docs/architecture.md "Computed fields"): the
  // server's error. The same call cannot succeed; the kind leaves out what it was for, as a
  // dead letter. nullopt for any other failure (retry).
  virtual std::optional<std::string> refusal() const { return std::nullopt; }
  // After refusal(): the documents of `op`'s mapping's source that `filter` selects on which
  // an expression of the mapping fails (at most `limit`, the first found in _id order), read
  // and evaluated as they are now, each with the value at `parent_path`; an aggregation over
  // them can then be run again leaving their values out. nullopt when the store failed (or
  // cannot tell: a fake).
  virtual std::optional<std::vector<failing_child>> failing_children(
      const write_op& /*op*/, const bson::document& /*filter*/, const std::string& /*parent_path*/,
      std::size_t /*limit*/) {
    return std::nullopt;
  }
  // Stores a dead letter of `op` saying `reason`; false when the store failed.
  virtual bool dead_letter(const write_op& /*op*/, const std::string& /*reason*/) { return false; }
  // One single-document update made on behalf of `op`.
  virtual store_write update_one(const write_op& op, const bson::document& filter,
                                 const bson::document& update,
                                 const bson::array& array_filters) = 0;
};

}  // namespace denormd::mapping
