#include "bson/json.h"

#include <bson/bson.h>

#include <charconv>
#include <cmath>

#include "bson/convert.h"
#include "common/clock.h"
#include "common/json_text.h"

namespace denormd::bson {

namespace {

void write_string(std::string& out, std::string_view s) {
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

template <class Int>
void write_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

std::string double_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// {"$key": "text"}
void write_wrapped(std::string& out, std::string_view key, std::string_view text) {
  out += "{\"";
  out += key;
  out += "\":";
  write_string(out, text);
  out += '}';
}

void write_iso_date(std::string& out, std::int64_t millis) {
  out += "{\"$date\":\"";
  append_iso8601(out, millis, iso_millis::when_nonzero);
  out += "\"}";
}

std::string base64(const std::vector<std::uint8_t>& data) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const std::uint32_t n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    s += table[(n >> 18) & 63];
    s += table[(n >> 12) & 63];
    s += table[(n >> 6) & 63];
    s += table[n & 63];
  }
  if (i < data.size()) {
    const std::uint32_t n = (data[i] << 16) | (i + 1 < data.size() ? data[i + 1] << 8 : 0);
    s += table[(n >> 18) & 63];
    s += table[(n >> 12) & 63];
    s += i + 1 < data.size() ? table[(n >> 6) & 63] : '=';
    s += '=';
  }
  return s;
}

// A double, int32 or int64: a bare number in relaxed mode (but for non-finite doubles), else
// wrapped in its type.
void write_number(std::string& out, const value& v, bool canonical) {
  switch (v.kind()) {
    case type::double_: {
      const double d = v.as<double>();
      if (canonical || !std::isfinite(d)) {
        write_wrapped(out, "$numberDouble", double_text(d));
      } else {
        out += double_text(d);
      }
      return;
    }
    case type::int32:
      if (canonical) return write_wrapped(out, "$numberInt", std::to_string(v.as<std::int32_t>()));
      return write_int(out, v.as<std::int32_t>());
    case type::int64:
      if (canonical) return write_wrapped(out, "$numberLong", std::to_string(v.as<std::int64_t>()));
      return write_int(out, v.as<std::int64_t>());
    default:
      return;  // write_json writes the other types
  }
}

void write_array(std::string& out, const array& items, json_mode mode) {
  out += '[';
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ',';
    first = false;
    write_json(out, item, mode);
  }
  out += ']';
}

void write_binary(std::string& out, const binary& b) {
  char sub[3];
  std::snprintf(sub, sizeof sub, "%02x", b.subtype);
  out += "{\"$binary\":{\"base64\":";
  write_string(out, base64(b.data));
  out += ",\"subType\":\"";
  out += sub;
  out += "\"}}";
}

void write_date(std::string& out, std::int64_t ms, bool canonical) {
  // Relaxed form uses ISO-8601 only for years 1970..9999, as the specification says.
  if (!canonical && ms >= 0 && ms <= 253402300799999) return write_iso_date(out, ms);
  out += "{\"$date\":";
  write_wrapped(out, "$numberLong", std::to_string(ms));
  out += '}';
}

// The types Extended JSON writes as an object with a $-key, in both modes.
void write_extended(std::string& out, const value& v, bool canonical) {
  switch (v.kind()) {
    case type::binary:
      return write_binary(out, v.as<binary>());
    case type::undefined:
      out += "{\"$undefined\":true}";
      return;
    case type::oid:
      return write_wrapped(out, "$oid", v.as<oid>().to_hex());
    case type::date:
      return write_date(out, v.as<date_time>().millis, canonical);
    case type::regex:
      out += "{\"$regularExpression\":{\"pattern\":";
      write_string(out, v.as<regex>().pattern);
      out += ",\"options\":";
      write_string(out, v.as<regex>().options);
      out += "}}";
      return;
    case type::code:
      return write_wrapped(out, "$code", v.as<code>().text);
    case type::symbol:
      return write_wrapped(out, "$symbol", v.as<symbol>().text);
    case type::timestamp:
      out += "{\"$timestamp\":{\"t\":";
      write_int(out, v.as<timestamp>().t);
      out += ",\"i\":";
      write_int(out, v.as<timestamp>().i);
      out += "}}";
      return;
    case type::decimal128:
      return write_wrapped(out, "$numberDecimal", v.as<decimal128>().to_string());
    case type::min_key:
      out += "{\"$minKey\":1}";
      return;
    case type::max_key:
      out += "{\"$maxKey\":1}";
      return;
    default:
      return;  // write_json writes the other types
  }
}

}  // namespace

expected<document> parse_json(std::string_view text) {
  // libbson also accepts a top-level array as a document; we want objects only.
  const auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '{') {
    return fail("invalid JSON: expected an object starting with '{'");
  }
  bson_error_t err{};
  bson_ptr b(bson_new_from_json(reinterpret_cast<const std::uint8_t*>(text.data()),
                                static_cast<ssize_t>(text.size()), &err));
  if (!b) {
    std::string message = std::string("invalid JSON: ") + err.message;
    // libbson's own words for its nesting limit say nothing to a reader.
    if (message.find("LEVELS_EXCEEDED") != std::string::npos) {
      message +=
          " (nested too deeply: libbson's JSON reader stops at about 100 levels of "
          "objects and arrays)";
    }
    return fail(std::move(message));
  }
  return from_bson(*b);
}

void write_json(std::string& out, const value& v, json_mode mode) {
  switch (v.kind()) {
    case type::double_:
    case type::int32:
    case type::int64:
      return write_number(out, v, mode == json_mode::canonical);
    case type::string:
      return write_string(out, v.as_string());
    case type::document:
      return write_document(out, v.as_document(), mode);
    case type::array:
      return write_array(out, v.as_array(), mode);
    case type::boolean:
      out += v.as<bool>() ? "true" : "false";
      return;
    case type::null:
      out += "null";
      return;
    case type::binary:
    case type::undefined:
    case type::oid:
    case type::date:
    case type::regex:
    case type::code:
    case type::symbol:
    case type::timestamp:
    case type::decimal128:
    case type::min_key:
    case type::max_key:
      return write_extended(out, v, mode == json_mode::canonical);
  }
}

std::string to_json(const value& v, json_mode mode) {
  std::string out;
  write_json(out, v, mode);
  return out;
}

std::string to_json(const document& doc, json_mode mode) {
  std::string out;
  write_document(out, doc, mode);
  return out;
}

void write_document(std::string& out, const document& doc, json_mode mode) {
  out += '{';
  bool first = true;
  for (const auto& f : doc) {
    if (!first) out += ',';
    first = false;
    write_string(out, f.name);
    out += ':';
    write_json(out, f.val, mode);
  }
  out += '}';
}

}  // namespace denormd::bson
