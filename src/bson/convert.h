#pragma once
// Wire BSON <-> value tree, through libbson. bson_t handles are always owned by bson_ptr.

#include <bson/bson.h>

#include <cstdint>
#include <span>

#include "bson/value.h"
#include "common/expected.h"
#include "common/handle.h"

namespace denormd::bson {

// bson_t carries an alignment attribute that GCC warns is dropped in template arguments;
// the pointer never depends on it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
using bson_ptr = c_handle<bson_t, bson_destroy>;
#pragma GCC diagnostic pop

// Parses one BSON document (validates lengths and UTF-8 of keys; errors name the problem).
expected<document> from_bson(std::span<const std::uint8_t> bytes);
expected<document> from_bson(const bson_t& doc);

// Converts the element an iterator points at (for callers that pick fields themselves).
expected<value> read_value(bson_iter_t& it);

// Builds a new bson_t from a document.
bson_ptr to_bson(const document& doc);
// Appends one value under `key` to an existing bson_t.
void append_value(bson_t* out, std::string_view key, const value& v);
// Appends the document's bytes to a buffer (for wire messages).
void append_bytes(const document& doc, std::vector<std::uint8_t>& out);

}  // namespace denormd::bson
