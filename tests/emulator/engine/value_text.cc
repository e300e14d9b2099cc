#include "value_text.h"

#include <cstdio>
#include <cstring>

namespace mongo_emulator::engine {

namespace bson = denormd::bson;

namespace {

void append_value(std::string& out, const bson::value& v);

void append_fields(std::string& out, const bson::document& d) {
  if (d.empty()) {
    out += "{}";
    return;
  }
  out += "{ ";
  bool first = true;
  for (const auto& f : d) {
    if (!first) out += ", ";
    first = false;
    out += f.name;
    out += ": ";
    append_value(out, f.val);
  }
  out += " }";
}

void append_items(std::string& out, const bson::array& a) {
  if (a.empty()) {
    out += "[]";
    return;
  }
  out += "[ ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i != 0) out += ", ";
    append_value(out, a[i]);
  }
  out += " ]";
}

void append_hex(std::string& out, const std::vector<std::uint8_t>& bytes) {
  static constexpr char digits[] = "0123456789ABCDEF";
  for (const auto b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 0xF];
  }
}

void append_value(std::string& out, const bson::value& v) {
  switch (v.kind()) {
    case bson::type::document:
      append_fields(out, v.as_document());
      return;
    case bson::type::array:
      append_items(out, v.as_array());
      return;
    case bson::type::double_:
      out += double_text(v.as<double>());
      return;
    case bson::type::int32:
      out += std::to_string(v.as<std::int32_t>());
      return;
    case bson::type::int64:
      out += std::to_string(v.as<std::int64_t>());
      return;
    case bson::type::decimal128:
      out += "NumberDecimal(\"" + v.as<bson::decimal128>().to_string() + "\")";
      return;
    case bson::type::string:
      out += '"' + v.as_string() + '"';
      return;
    case bson::type::symbol:
      out += '"' + v.as<bson::symbol>().text + '"';
      return;
    case bson::type::code:
      out += v.as<bson::code>().text;
      return;
    case bson::type::boolean:
      out += v.as<bool>() ? "true" : "false";
      return;
    case bson::type::null:
      out += "null";
      return;
    case bson::type::undefined:
      out += "undefined";
      return;
    case bson::type::min_key:
      out += "MinKey";
      return;
    case bson::type::max_key:
      out += "MaxKey";
      return;
    case bson::type::oid:
      out += "ObjectId('" + v.as<bson::oid>().to_hex() + "')";
      return;
    case bson::type::date:
      out += "new Date(" + std::to_string(v.as<bson::date_time>().millis) + ")";
      return;
    case bson::type::timestamp: {
      const auto& ts = v.as<bson::timestamp>();
      out += "Timestamp(" + std::to_string(ts.t) + ", " + std::to_string(ts.i) + ")";
      return;
    }
    case bson::type::regex:
      out += "/" + v.as<bson::regex>().pattern + "/" + v.as<bson::regex>().options;
      return;
    case bson::type::binary: {
      const auto& b = v.as<bson::binary>();
      out += "BinData(" + std::to_string(b.subtype) + ", ";
      append_hex(out, b.data);
      out += ")";
      return;
    }
  }
}

}  // namespace

std::string double_text(double d) {
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%.16g", d);
  std::string out(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  // MongoDB's appendDoubleNice marks integral values; it looks for '.', 'E' and 'N' only.
  if (out.find_first_of(".EN") == std::string::npos) out += ".0";
  return out;
}

std::string value_text(const bson::value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string element_text(std::string_view name, const bson::value& v) {
  std::string out(name);
  out += ": ";
  append_value(out, v);
  return out;
}

std::string document_text(const bson::document& d) {
  std::string out;
  append_fields(out, d);
  return out;
}

}  // namespace mongo_emulator::engine
