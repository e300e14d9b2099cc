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
  const bool canonical = mode == json_mode::canonical;
  switch (v.kind()) {
    case type::double_: {
      const double d = v.as<double>();
      if (canonical || !std::isfinite(d)) {
        write_wrapped(out, "$numberDouble", double_text(d));
      } else {
        out += double_text(d);
      }
      break;
    }
    case type::int32:
      if (canonical) {
        write_wrapped(out, "$numberInt", std::to_string(v.as<std::int32_t>()));
      } else {
        write_int(out, v.as<std::int32_t>());
      }
      break;
    case type::int64:
      if (canonical) {
        write_wrapped(out, "$numberLong", std::to_string(v.as<std::int64_t>()));
      } else {
        write_int(out, v.as<std::int64_t>());
      }
      break;
    case type::string:
      write_string(out, v.as_string());
      break;
    case type::document:
      write_document(out, v.as_document(), mode);
      break;
    case type::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.as_array()) {
        if (!first) out += ',';
        first = false;
        write_json(out, item, mode);
      }
      out += ']';
      break;
    }
    case type::binary: {
      const auto& b = v.as<binary>();
      char sub[3];
      std::snprintf(sub, sizeof sub, "%02x", b.subtype);
      out += "{\"$binary\":{\"base64\":";
      write_string(out, base64(b.data));
      out += ",\"subType\":\"";
      out += sub;
      out += "\"}}";
      break;
    }
    case type::undefined:
      out += "{\"$undefined\":true}";
      break;
    case type::oid:
      write_wrapped(out, "$oid", v.as<oid>().to_hex());
      break;
    case type::boolean:
      out += v.as<bool>() ? "true" : "false";
      break;
    case type::date: {
      const std::int64_t ms = v.as<date_time>().millis;
      // Relaxed form uses ISO-8601 only for years 1970..9999, as the specification says.
      if (!canonical && ms >= 0 && ms <= 253402300799999) {
        write_iso_date(out, ms);
      } else {
        out += "{\"$date\":";
        write_wrapped(out, "$numberLong", std::to_string(ms));
        out += '}';
      }
      break;
    }
    case type::null:
      out += "null";
      break;
    case type::regex: {
      out += "{\"$regularExpression\":{\"pattern\":";
      write_string(out, v.as<regex>().pattern);
      out += ",\"options\":";
      write_string(out, v.as<regex>().options);
      out += "}}";
      break;
    }
    case type::code:
      write_wrapped(out, "$code", v.as<code>().text);
      break;
    case type::symbol:
      write_wrapped(out, "$symbol", v.as<symbol>().text);
      break;
    case type::timestamp:
      out += "{\"$timestamp\":{\"t\":";
      write_int(out, v.as<timestamp>().t);
      out += ",\"i\":";
      write_int(out, v.as<timestamp>().i);
      out += "}}";
      break;
    case type::decimal128:
      write_wrapped(out, "$numberDecimal", v.as<decimal128>().to_string());
      break;
    case type::min_key:
      out += "{\"$minKey\":1}";
      break;
    case type::max_key:
      out += "{\"$maxKey\":1}";
      break;
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
