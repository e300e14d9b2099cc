#pragma once
// Applies planned writes to MongoDB. Ops of one mapping run in plan order as ordered bulk
// writes with w:"majority" (refills between them run in place); ops of different mappings
// touch disjoint paths and run as separate bulks. A statement the server rejects for good
// (document too large, validation) is counted, logged with its event's token and stored in
// `<db>.denormd_deadletters`, and the rest goes on. Any other failure is returned: every op
// is idempotent, so the caller retries the whole batch. One writer per applier thread.

#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/write_op.h"
#include "metrics/metrics.h"
#include "mongo/connection.h"

namespace denormd::sink {

inline constexpr const char* deadletter_collection = "denormd_deadletters";

struct writer_options {
  std::string meta_db;   // where dead letters go
  bool dry_run = false;  // log the writes, send none
};

class writer {
 public:
  writer(mongo::connection& conn, metrics::metrics& m, writer_options opts);

  // `event_tokens[op.event]` is the resume token of the event each op came from.
  mongo::status apply(const std::vector<mapping::write_op>& ops,
                      std::span<const bson::document> event_tokens, const mapping::ns& source);

 private:
  mongo::status run_bulk(std::span<const mapping::write_op* const> run,
                         std::span<const bson::document> event_tokens, const mapping::ns& source);
  mongo::status run_refill(const mapping::write_op& op,
                           std::span<const bson::document> event_tokens, const mapping::ns& source);
  mongo::status run_fill(const mapping::write_op& op, std::span<const bson::document> event_tokens,
                         const mapping::ns& source);
  mongo::status dead_letter(const mapping::write_op& op, const bson::document& update,
                            const mongo::driver_error& error, const bson::document* token,
                            const mapping::ns& source);
  void acknowledged(const mapping::write_op& op, std::int64_t now_ms);

  mongo::connection& conn_;
  metrics::metrics& metrics_;
  writer_options opts_;
};

}  // namespace denormd::sink
