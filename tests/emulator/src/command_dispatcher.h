#pragma once
// Runs one request: legacy-opcode and `$db` checks, the failCommand fail point (close, block,
// error, writeConcernError), retryable-write replay, await-data waits, MongoDB's error replies
// and labels, and the operationTime/$clusterTime every reply carries.
// Lifecycle: one per server, shared by all connections. Thread-safe (stateless apart from the
// immutable command table).

#include <utility>  // first: Boost 1.74 awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <optional>

#include "command.h"
#include "command_table.h"

namespace mongo_emulator {

class command_dispatcher {
 public:
  explicit command_dispatcher(server_state& server);

  // The reply document, or nullopt when the connection must close without a reply.
  boost::asio::awaitable<std::optional<bson::document>> execute(const request& req,
                                                                connection_info& conn);

 private:
  // execute() after the command was found: fail points, retry cache, handler, write concern.
  boost::asio::awaitable<std::optional<bson::document>> run(const command_spec& spec,
                                                            const request& req,
                                                            connection_info& conn);
  bson::document error_reply(const denormd::error& e, const bson::array* labels) const;
  // What decides a reply's errorLabels besides the code (MongoDB's ErrorLabelBuilder).
  struct label_inputs {
    // The command opens a change stream, or is a getMore whose checked-out cursor is one.
    // failCommand acts before a getMore checks its cursor out, so MongoDB cannot tell then.
    bool change_stream = false;
    bool write_concern_error = false;
    bool transaction = false;  // a statement of a transaction, or its commit or abort
    bool commit_or_abort = false;
  };
  bson::array labels_for(const request& req, const command_spec* spec, int code,
                         label_inputs in) const;
  void add_cluster_time(bson::document& reply) const;

  server_state& server_;
  command_table table_;
};

}  // namespace mongo_emulator
