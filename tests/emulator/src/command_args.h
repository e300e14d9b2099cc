#pragma once
// Reading command arguments with MongoDB's type errors ("BSON field 'find.limit' is the wrong
// type 'string', expected type 'long'"), and building the common reply shapes. Stateless.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// The command's target collection (the first field's string value); 73 InvalidNamespace when it
// is not a valid collection name.
denormd::expected<std::string> collection_arg(const bson::document& body);

// Optional typed fields; absent → nullopt, wrong type → 14 TypeMismatch.
denormd::expected<std::optional<std::int64_t>> int_arg(const bson::document& body,
                                                       std::string_view field);
denormd::expected<std::optional<bool>> bool_arg(const bson::document& body, std::string_view field);
denormd::expected<const bson::document*> document_arg(const bson::document& body,
                                                      std::string_view field);
denormd::expected<const bson::array*> array_arg(const bson::document& body, std::string_view field);
denormd::expected<std::optional<std::string>> string_arg(const bson::document& body,
                                                         std::string_view field);

// Whether the request's $readPreference lets it run on a secondary (a mode other than
// "primary"; none means primary), as ReadPreferenceSetting::canRunOnSecondary.
bool secondary_ok(const bson::document& body);

// {cursor: {firstBatch|nextBatch, postBatchResumeToken?, atClusterTime?, id, ns}, ok: 1.0}, in
// the order of MongoDB's CursorResponseBuilder.
bson::document cursor_reply(std::int64_t id, const std::string& ns, bson::array batch, bool first,
                            const bson::document* post_batch_resume_token = nullptr,
                            std::optional<bson::timestamp> at_cluster_time = std::nullopt);

// A number as MongoDB counts it in replies (int32).
inline bson::value count_value(std::size_t n) {
  return bson::value(static_cast<std::int32_t>(n));
}

}  // namespace mongo_emulator
