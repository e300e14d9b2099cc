#include "value_format.h"

#include <cmath>
#include <cstdio>

namespace mongo_emulator {

namespace bson = denormd::bson;

namespace {

void append_value(std::string& out, const bson::value& v);

void append_double(std::string& out, double d) {
  char buf[32];
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.1f", d);
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", d);
  }
  out += buf;
}

void append_document(std::string& out, const bson::document& d) {
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

void append_value(std::string& out, const bson::value& v) {
  switch (v.kind()) {
    case bson::type::double_:
      append_double(out, v.as<double>());
      break;
    case bson::type::string:
      out += '"';
      out += v.as_string();
      out += '"';
      break;
    case bson::type::document:
      append_document(out, v.as_document());
      break;
    case bson::type::array: {
      const auto& a = v.as_array();
      if (a.empty()) {
        out += "[]";
        break;
      }
      out += "[ ";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i > 0) out += ", ";
        append_value(out, a[i]);
      }
      out += " ]";
      break;
    }
    case bson::type::oid:
      out += "ObjectId('" + v.as<bson::oid>().to_hex() + "')";
      break;
    case bson::type::boolean:
      out += v.as<bool>() ? "true" : "false";
      break;
    case bson::type::date:
      out += "new Date(" + std::to_string(v.as<bson::date_time>().millis) + ")";
      break;
    case bson::type::null:
      out += "null";
      break;
    case bson::type::undefined:
      out += "undefined";
      break;
    case bson::type::int32:
      out += std::to_string(v.as<std::int32_t>());
      break;
    case bson::type::int64:
      out += std::to_string(v.as<std::int64_t>());
      break;
    case bson::type::timestamp: {
      const auto& ts = v.as<bson::timestamp>();
      out += "Timestamp(" + std::to_string(ts.t) + ", " + std::to_string(ts.i) + ")";
      break;
    }
    case bson::type::decimal128:
      out += "NumberDecimal(\"" + v.as<bson::decimal128>().to_string() + "\")";
      break;
    case bson::type::regex: {
      const auto& r = v.as<bson::regex>();
      out += "/" + r.pattern + "/" + r.options;
      break;
    }
    case bson::type::binary:
      out += "BinData(" + std::to_string(v.as<bson::binary>().subtype) + ", ...)";
      break;
    case bson::type::min_key:
      out += "MinKey";
      break;
    case bson::type::max_key:
      out += "MaxKey";
      break;
    case bson::type::code:
      out += v.as<bson::code>().text;
      break;
    case bson::type::symbol:
      out += v.as<bson::symbol>().text;
      break;
  }
}

}  // namespace

std::string format_value(const bson::value& v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string format_document(const bson::document& d) {
  std::string out;
  append_document(out, d);
  return out;
}

}  // namespace mongo_emulator
