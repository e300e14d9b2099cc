#pragma once
// The process's connection to MongoDB: a libmongoc client pool (error API v2) and the few
// operations denormd performs. Created once at start-up, destroyed last. Thread-safe: every
// operation leases its own client from the pool for its duration, and a change stream keeps
// its lease for as long as it lives.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mongo/document_client.h"
#include "mongo/driver_error.h"

namespace denormd::mongo {

class change_stream;

struct watch_options {
  std::optional<bson::document> resume_after;
  std::optional<bson::document> start_after;
  std::optional<bson::timestamp> start_at_operation_time;
  bool update_lookup = true;
  bool pre_images = false;   // fullDocumentBeforeChange: "whenAvailable"
  bool post_images = false;  // fullDocument: "whenAvailable" (as of the change; not updateLookup)
  std::int32_t max_await_ms = 1000;
  std::int32_t batch_size = 0;
  bson::array pipeline;  // stages after $changeStream
};

// How far one read may go (aggregate_each).
struct aggregate_options {
  // maxTimeMS: the server gives up after this long (50 MaxTimeMSExpired); 0: no bound.
  std::int64_t max_time_ms = 0;
  bool allow_disk_use = false;  // stages past their memory bound spill instead of failing
  std::int32_t batch_size = 0;
};

// How long one operation may block on an unreachable server: waiting for a server to be
// selected, and for a new connection to be set up. 0 keeps the driver's default (30 s and
// 10 s); an option the URI sets itself wins.
struct connect_options {
  std::int32_t server_selection_timeout_ms = 0;
  std::int32_t connect_timeout_ms = 0;
};

class connection final : public document_client {
 public:
  // Parses the URI and creates the pool; does not contact the server yet.
  static result<std::unique_ptr<connection>> open(const std::string& uri,
                                                  const std::string& app_name,
                                                  const connect_options& timeouts = {});
  ~connection() override;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // The database named in the URI path ("" when none).
  const std::string& default_database() const;
  // `e` for an operator: its to_string(), naming the URI's user when the server refused the
  // credentials ("authentication failed for user "denormd" (authSource admin): ...").
  std::string describe(const driver_error& e) const;

  result<bson::document> command(const std::string& db, const bson::document& cmd);
  // The server's current operation time (from a ping's operationTime).
  result<bson::timestamp> operation_time();

  // document_client: bulk updates with w:"majority", inserts, finds.
  result<bulk_outcome> update_bulk(const std::string& db, const std::string& coll,
                                   std::span<const write_request> requests, bool ordered) override;
  result<bulk_outcome> update_one_within(const std::string& db, const std::string& coll,
                                         const write_request& request,
                                         std::chrono::milliseconds max_time) override;
  status replace_one(const std::string& db, const std::string& coll, const bson::document& filter,
                     const bson::document& replacement, bool upsert);
  status insert_one(const std::string& db, const std::string& coll,
                    const bson::document& doc) override;
  status kill_sessions(const std::vector<bson::document>& lsids) override;

  status find_each(const std::string& db, const std::string& coll, const bson::document& filter,
                   const find_options& opts,
                   const std::function<bool(bson::document&&)>& each) override;
  result<std::vector<bson::document>> find(const std::string& db, const std::string& coll,
                                           const bson::document& filter,
                                           const find_options& opts) override;
  result<std::optional<bson::document>> find_one(const std::string& db, const std::string& coll,
                                                 const bson::document& filter) override;
  result<std::vector<bson::document>> aggregate(const std::string& db, const std::string& coll,
                                                const bson::array& pipeline) override;
  result<snapshot_results> aggregate_snapshot(const std::string& db, const std::string& coll,
                                              const bson::array& pipeline) override;
  // Streams an aggregation's results to `each` (false stops early), so that what the caller
  // keeps bounds its memory, not the results' count.
  status aggregate_each(const std::string& db, const std::string& coll, const bson::array& pipeline,
                        const aggregate_options& opts,
                        const std::function<bool(bson::document&&)>& each);
  // readConcern "snapshot", w:"majority" at commit; holds a pooled client until destroyed.
  result<std::unique_ptr<transaction>> start_transaction() override;
  // The same, one transaction after another; holds a pooled client until destroyed.
  result<std::unique_ptr<session>> start_session() override;

  // Opens a collection change stream; the stream keeps a pooled client until destroyed.
  result<std::unique_ptr<change_stream>> watch(const std::string& db, const std::string& coll,
                                               const watch_options& opts);

  struct impl;

 private:
  explicit connection(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

// A change stream opened by connection::watch. Used by one thread; destroy it before the
// connection.
class change_stream {
 public:
  ~change_stream();
  change_stream(const change_stream&) = delete;
  change_stream& operator=(const change_stream&) = delete;

  // The next event as wire BSON, or nullopt when the server had nothing within
  // max_await_ms (resume_token() is then the post-batch token).
  result<std::optional<std::vector<std::uint8_t>>> next();
  // Where to resume: after the last event returned, or the post-batch token when idle.
  std::optional<bson::document> resume_token() const;
  // Times the driver reopened this stream by itself inside next(), after a resumable error
  // it did not report (it does that once per error before giving up).
  std::uint64_t driver_resumes() const;

  struct impl;
  explicit change_stream(std::unique_ptr<impl> i);

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace denormd::mongo
