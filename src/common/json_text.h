#pragma once
// Text helpers shared by the Extended JSON writer, the JSON log format and the hex decoders
// (ObjectIds, resume tokens): string escaping (always valid UTF-8 out), RFC 6901 pointers for
// error messages, hex digits. Pure.

#include <string>
#include <string_view>

namespace denormd {

// Appends `s` escaped for a JSON string, without the quotes. Invalid UTF-8 becomes U+FFFD.
void append_json_escaped(std::string& out, std::string_view s);

// `base` + "/" + `token`, with "~" and "/" in the token escaped as RFC 6901 says.
std::string pointer_join(const std::string& base, std::string_view token);

// The value of one hex digit (either case), or -1 when `c` is not one.
int hex_digit(char c);

}  // namespace denormd
