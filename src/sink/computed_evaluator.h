#pragma once
// Has the server evaluate computed fields on documents denormd read (an event's document or
// pre-image, a fill's or refill's source): one {aggregate: 1} per chunk of documents,
// [{$documents: {$literal: [...]}}, {$project: {<key>: <expression>}}], the documents sent as
// literal data (never read as expressions) and trimmed to the fields the expressions read.
// When the server refuses a chunk because of a document (a $toInt of "abc", a $divide by
// zero), the chunk is split until the documents and fields that fail are known; only those
// fail, and everything else gets its values (docs/architecture.md, "Computed fields").
// Thread-compatible: one per thread, over a connection that is thread-safe.

#include <span>
#include <string>
#include <vector>

#include "bson/value.h"
#include "mapping/change_event.h"
#include "mapping/computed_fields.h"
#include "mongo/document_client.h"

namespace denormd::sink {

class computed_evaluator {
 public:
  explicit computed_evaluator(mongo::document_client& conn) : conn_(conn) {}

  struct failure {
    std::size_t doc = 0;  // index in the documents given
    mapping::computed_failure what;
  };
  // Puts each entry's value into each document (computed_fields::put; a value the server
  // could not compute is absent) and returns the failures, or the error that stopped it (a
  // network or server trouble not about any document: retry later; documents may then hold
  // values of this attempt, which the next one replaces). Runs on database `db`.
  mongo::result<std::vector<failure>> evaluate(const std::string& db,
                                               const mapping::computed_fields& fields,
                                               std::span<bson::document* const> docs);

  // Round trips made so far (for tests and benchmarks).
  std::size_t calls() const { return calls_; }

 private:
  // The server's values for `inputs`, with `projection`: one document per input.
  mongo::result<std::vector<bson::document>> run(const std::string& db,
                                                 const bson::document& projection,
                                                 std::span<const bson::document> inputs);
  // Evaluates docs [from, to) of `docs` (their inputs in `inputs`), splitting on refusals.
  mongo::status evaluate_range(const std::string& db, const mapping::computed_fields& fields,
                               std::span<bson::document* const> docs,
                               std::span<const bson::document> inputs, std::size_t from,
                               std::size_t to, std::vector<failure>& out);
  // One document the server refused as a whole: each entry alone, to name those that fail.
  mongo::status evaluate_one(const std::string& db, const mapping::computed_fields& fields,
                             bson::document& doc, const bson::document& input, std::size_t index,
                             const mongo::driver_error& refusal, std::vector<failure>& out);

  mongo::document_client& conn_;
  std::size_t calls_ = 0;
};

// Whether the server refused an evaluation because of the data it was given (that document
// fails), rather than for a reason that would fail any document (no $documents, no rights)
// or a transient one.
bool refused_for_the_data(const mongo::driver_error& e);

}  // namespace denormd::sink
