#pragma once
// JSON text helpers shared by the Extended JSON writer and the JSON log format: string
// escaping (always valid UTF-8 out) and RFC 6901 pointers for error messages. Pure.

#include <string>
#include <string_view>

namespace denormd {

// Appends `s` escaped for a JSON string, without the quotes. Invalid UTF-8 becomes U+FFFD.
void append_json_escaped(std::string& out, std::string_view s);

// `base` + "/" + `token`, with "~" and "/" in the token escaped as RFC 6901 says.
std::string pointer_join(const std::string& base, std::string_view token);

}  // namespace denormd
