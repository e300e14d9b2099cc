#pragma once
// What an applier writes a batch through: every op acknowledged, or an error (then the ops
// not yet written are retried; ops are idempotent). sink::fenced_writer is the MongoDB one
// (sink::writer, unfenced, for dry runs and inside its transactions); tests use fakes.
// Implementations say their own thread-safety; an applier calls its writer from one thread.

#include <cstdint>
#include <span>
#include <vector>

#include "bson/value.h"
#include "mapping/write_op.h"
#include "mongo/driver_error.h"

namespace denormd::sink {

class batch_writer {
 public:
  virtual ~batch_writer() = default;

  // Before the first apply(): takes the right to write the source, under `epoch` when given
  // (a lease's, with --ha) or a new one, and returns the epoch its writes and the source's
  // checkpoints go under from now on (0: none, unfenced). Called again after a failure.
  virtual mongo::result<std::int64_t> open(std::int64_t epoch) { return epoch; }

  // `event_tokens[op.event]` is the resume token of the event each op came from.
  virtual mongo::status apply(std::span<const mapping::write_op> ops,
                              std::span<const bson::document> event_tokens,
                              const mapping::ns& source) = 0;

  // After an apply() that failed: how many of its first ops are written for good anyway (a
  // retry starts after them). 0 when unknown.
  virtual std::size_t committed() const { return 0; }

 protected:
  batch_writer() = default;
  batch_writer(const batch_writer&) = default;
  batch_writer& operator=(const batch_writer&) = default;
};

}  // namespace denormd::sink
