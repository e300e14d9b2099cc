#pragma once
// The document reads and writes the sink and the checkpoint store make, apart from the
// connection that implements them over the driver: they depend on this, so their policy
// (ordering, dead letters, per-document fallback) is unit-testable with a fake.
// Implementations are thread-safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mongo/driver_error.h"

namespace denormd::mongo {

// One update statement of a bulk write; refers to documents the caller keeps alive.
struct write_request {
  bool multi = false;
  const bson::document* filter = nullptr;
  const bson::document* update = nullptr;
  const bson::array* array_filters = nullptr;  // optional
  bool upsert = false;
  const bson::array* pipeline = nullptr;  // optional; not empty: replaces `update`
};

struct bulk_outcome {
  std::int64_t matched = 0;
  std::int64_t modified = 0;
  std::int64_t upserted = 0;
  // Ordered bulks stop at the first failing statement; the ones after it did not run. The
  // driver's own refusal of a statement (an invalid update document) is reported the same way.
  std::optional<std::size_t> failed_index;
  std::optional<driver_error> write_error;
};

struct find_options {
  bson::document sort;
  bson::document projection;
  std::int64_t limit = 0;  // 0: no limit
  std::int32_t batch_size = 0;
};

class transaction;
class session;

class document_client {
 public:
  virtual ~document_client() = default;

  // A multi-document transaction on a session of its own (w:"majority" at commit). Clients
  // that have none refuse (the default).
  virtual result<std::unique_ptr<transaction>> start_transaction();
  // A session for transactions run one after another, whose id is known before the first of
  // them. Clients that have none refuse (the default).
  virtual result<std::unique_ptr<session>> start_session();

  // Bulk update with w:"majority". A write error is reported in the outcome, not as a
  // failure; failures are errors of the whole command (network, election, write concern).
  virtual result<bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                           std::span<const write_request> requests,
                                           bool ordered) = 0;
  // One update statement that the server gives up on after `max_time` (maxTimeMS: it fails
  // with 50 MaxTimeMSExpired) instead of waiting longer, e.g. for a document that another
  // client's open transaction wrote: for callers that must never be held up by one. Clients
  // that cannot bound a statement run it unbounded (the default).
  virtual result<bulk_outcome> update_one_within(const std::string& db, const std::string& coll,
                                                 const write_request& request,
                                                 std::chrono::milliseconds max_time);
  virtual status insert_one(const std::string& db, const std::string& coll,
                            const bson::document& doc) = 0;
  // killSessions: ends the sessions `lsids` ({id: UUID}) and aborts their open transactions,
  // so that the documents those wrote are free at once. Clients that cannot refuse (the
  // default).
  virtual status kill_sessions(const std::vector<bson::document>& lsids);
  // Streams the matching documents to `each` (return false to stop early).
  virtual status find_each(const std::string& db, const std::string& coll,
                           const bson::document& filter, const find_options& opts,
                           const std::function<bool(bson::document&&)>& each) = 0;
  virtual result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                                   const bson::document& filter,
                                                   const find_options& opts) = 0;
  virtual result<std::optional<bson::document>> find_one(const std::string& db,
                                                         const std::string& coll,
                                                         const bson::document& filter) = 0;
  // Runs an aggregation pipeline and returns every result document. An empty `coll` runs it
  // on the database ({aggregate: 1}), for pipelines that start with $documents.
  virtual result<std::vector<bson::document>> aggregate(const std::string& db,
                                                        const std::string& coll,
                                                        const bson::array& pipeline) = 0;
  // The same at one point in time (readConcern "snapshot", MongoDB 5.0+), and that time: the
  // results reflect every write at or before `at` and none after.
  struct snapshot_results {
    std::vector<bson::document> docs;
    bson::timestamp at;
  };
  virtual result<snapshot_results> aggregate_snapshot(const std::string& db,
                                                      const std::string& coll,
                                                      const bson::array& pipeline) = 0;

 protected:
  document_client() = default;
  document_client(const document_client&) = default;
  document_client& operator=(const document_client&) = default;
};

// The reads and writes of one transaction: nobody sees its writes before commit(), and its
// reads see them. A statement the server refuses aborts the whole transaction (MongoDB's rule),
// so whatever follows it fails. Destroyed without a commit, it is aborted. Writes take no
// write concern of their own; aggregate_snapshot reads outside the transaction (a snapshot at
// a cluster time of its own, which a transaction cannot give). One thread at a time.
class transaction : public document_client {
 public:
  // The session it runs on ({id: UUID}), for kill_sessions by another client.
  virtual bson::document session_id() const = 0;
  // Commits (the driver retries once on a retryable error). A failure labelled
  // UnknownTransactionCommitResult may or may not have committed.
  virtual status commit() = 0;
};

// A logical session on which transactions run one after another. Its id is fixed from the
// start, so that it can be published before its first transaction: whoever fences out its
// writes ends it (kill_sessions) instead of waiting for the server to abort a transaction left
// open. Destroyed, it aborts a transaction still open. One thread at a time.
class session {
 public:
  virtual ~session() = default;
  // {id: UUID}
  virtual bson::document id() const = 0;
  // A transaction on this session (readConcern "snapshot", w:"majority" at commit); the one
  // before it must have ended (committed, or destroyed: aborted).
  virtual result<std::unique_ptr<transaction>> start_transaction() = 0;

 protected:
  session() = default;
  session(const session&) = default;
  session& operator=(const session&) = default;
};

inline result<bulk_outcome> document_client::update_one_within(const std::string& db,
                                                               const std::string& coll,
                                                               const write_request& request,
                                                               std::chrono::milliseconds) {
  return update_bulk(db, coll, std::span(&request, 1), true);
}

inline status document_client::kill_sessions(const std::vector<bson::document>&) {
  return failure(
      driver_error{driver_error::origin::client, 0, "this client does not kill sessions", {}});
}

inline result<std::unique_ptr<transaction>> document_client::start_transaction() {
  return failure(
      driver_error{driver_error::origin::client, 0, "this client does not run transactions", {}});
}

inline result<std::unique_ptr<session>> document_client::start_session() {
  return failure(
      driver_error{driver_error::origin::client, 0, "this client does not run transactions", {}});
}

}  // namespace denormd::mongo
