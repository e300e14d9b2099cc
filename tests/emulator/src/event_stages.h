#pragma once
// Builds the stages allowed after $changeStream: $match (the query matcher over the event) and
// the document-shaping stages the engine implements. Unknown stages fail with 40324, stages
// MongoDB forbids in a change stream with 20 IllegalOperation. Stateless.

#include <string>

#include "bson/value.h"
#include "change_stream.h"
#include "common/expected.h"

namespace mongo_emulator {

// `let`: the aggregate command's variables (engine::evaluate_let), or nullptr.
denormd::expected<event_stage> make_event_stage(const std::string& name, const bson::value& spec,
                                                const bson::document* let);

}  // namespace mongo_emulator
