#pragma once
// Encodes value trees straight into wire BSON, byte for byte what denormd::bson::append_bytes
// (libbson) produces, without building an intermediate bson_t: replies are the server's hottest
// output. Also splices pre-encoded documents (change events encoded once from the stored
// documents they show) into a reply. Pure functions; thread-safe.

#include <cstdint>
#include <string_view>
#include <vector>

#include "bson/value.h"

namespace mongo_emulator {

namespace bson = denormd::bson;

// A pre-encoded document stands in a batch array as a bson::binary of this subtype holding the
// document's bytes. Only `splice` arrays given to write_document are read this way: batch
// elements are otherwise always documents, so the marker cannot be confused with user data.
inline constexpr std::uint8_t raw_document_subtype = 0x80;

// Appends `doc` to `out`. Binary elements directly inside `splice` (when given) are written as
// the embedded documents whose bytes they hold.
void write_document(const bson::document& doc, std::vector<std::uint8_t>& out,
                    const bson::array* splice = nullptr);

// Appends one element (type byte, key, value) to a document being written by hand.
void write_element(std::string_view key, const bson::value& v, std::vector<std::uint8_t>& out);
// The same for an embedded document not held in a bson::value (no copy needed).
void write_document_element(std::string_view key, const bson::document& d,
                            std::vector<std::uint8_t>& out);

// Starts a document (a length placeholder); finish_document writes the terminator and length.
std::size_t begin_document(std::vector<std::uint8_t>& out);
void finish_document(std::vector<std::uint8_t>& out, std::size_t start);

}  // namespace mongo_emulator
