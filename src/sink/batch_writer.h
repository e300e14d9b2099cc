#pragma once
// What an applier writes a batch through: every op acknowledged, or an error (then the whole
// batch is retried; ops are idempotent). sink::writer is the MongoDB one; tests use fakes.
// Implementations say their own thread-safety; an applier calls each of its writers from one
// thread at a time.

#include <span>
#include <vector>

#include "bson/value.h"
#include "mapping/write_op.h"
#include "mongo/driver_error.h"

namespace denormd::sink {

class batch_writer {
 public:
  virtual ~batch_writer() = default;

  // `event_tokens[op.event]` is the resume token of the event each op came from.
  virtual mongo::status apply(std::span<const mapping::write_op> ops,
                              std::span<const bson::document> event_tokens,
                              const mapping::ns& source) = 0;

 protected:
  batch_writer() = default;
  batch_writer(const batch_writer&) = default;
  batch_writer& operator=(const batch_writer&) = default;
};

}  // namespace denormd::sink
