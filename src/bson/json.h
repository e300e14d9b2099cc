#pragma once
// MongoDB Extended JSON v2: parsing accepts canonical and relaxed forms (libbson's parser);
// printing is our own compact writer so output is one line with no padding (libbson's
// bson_as_relaxed_extended_json writes `{ "a" : 1 }`, and would need a bson_t copy first).

#include <string>
#include <string_view>

#include "bson/value.h"
#include "common/expected.h"

namespace denormd::bson {

enum class json_mode { relaxed, canonical };

// Parses one JSON object. Errors carry libbson's message (with line/column where it has one).
expected<document> parse_json(std::string_view text);

std::string to_json(const document& doc, json_mode mode = json_mode::relaxed);
std::string to_json(const value& v, json_mode mode = json_mode::relaxed);
void write_json(std::string& out, const value& v, json_mode mode = json_mode::relaxed);
void write_document(std::string& out, const document& doc, json_mode mode = json_mode::relaxed);

}  // namespace denormd::bson
