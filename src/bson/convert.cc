#include "bson/convert.h"

#include <cstring>

namespace denormd::bson {

namespace {

constexpr int max_depth = 200;  // MongoDB nests documents at most 100 deep; be generous.

expected<document> read_document(bson_iter_t& it, int depth);

expected<value> read_value_at(bson_iter_t& it, int depth) {
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_DOUBLE:
      return value(bson_iter_double(&it));
    case BSON_TYPE_UTF8: {
      std::uint32_t len = 0;
      const char* s = bson_iter_utf8(&it, &len);
      return value(std::string(s, len));
    }
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: {
      const bool is_array = bson_iter_type(&it) == BSON_TYPE_ARRAY;
      bson_iter_t child;
      if (!bson_iter_recurse(&it, &child)) return fail("corrupt BSON: bad embedded document");
      auto doc = read_document(child, depth + 1);
      if (!doc) return doc.error();
      if (!is_array) return value(std::move(doc).value());
      array items;
      items.reserve(doc->size());
      for (auto& f : doc->fields())
        items.push_back(std::move(f.val));
      return value(std::move(items));
    }
    case BSON_TYPE_BINARY: {
      bson_subtype_t subtype{};
      std::uint32_t len = 0;
      const std::uint8_t* data = nullptr;
      bson_iter_binary(&it, &subtype, &len, &data);
      binary b;
      b.subtype = static_cast<std::uint8_t>(subtype);
      if (data != nullptr) b.data.assign(data, data + len);
      return value(std::move(b));
    }
    case BSON_TYPE_UNDEFINED:
      return value(undefined_t{});
    case BSON_TYPE_OID: {
      oid o;
      std::memcpy(o.bytes.data(), bson_iter_oid(&it)->bytes, 12);
      return value(o);
    }
    case BSON_TYPE_BOOL:
      return value(bson_iter_bool(&it));
    case BSON_TYPE_DATE_TIME:
      return value(date_time{bson_iter_date_time(&it)});
    case BSON_TYPE_NULL:
      return value(null_t{});
    case BSON_TYPE_REGEX: {
      const char* options = nullptr;
      const char* pattern = bson_iter_regex(&it, &options);
      return value(regex{pattern ? pattern : "", options ? options : ""});
    }
    case BSON_TYPE_CODE: {
      std::uint32_t len = 0;
      const char* s = bson_iter_code(&it, &len);
      return value(code{std::string(s, len)});
    }
    case BSON_TYPE_SYMBOL: {
      std::uint32_t len = 0;
      const char* s = bson_iter_symbol(&it, &len);
      return value(symbol{std::string(s, len)});
    }
    case BSON_TYPE_INT32:
      return value(bson_iter_int32(&it));
    case BSON_TYPE_TIMESTAMP: {
      std::uint32_t t = 0;
      std::uint32_t i = 0;
      bson_iter_timestamp(&it, &t, &i);
      return value(timestamp{t, i});
    }
    case BSON_TYPE_INT64:
      return value(static_cast<std::int64_t>(bson_iter_int64(&it)));
    case BSON_TYPE_DECIMAL128: {
      bson_decimal128_t d{};
      bson_iter_decimal128(&it, &d);
      return value(decimal128{d.low, d.high});
    }
    case BSON_TYPE_MINKEY:
      return value(min_key{});
    case BSON_TYPE_MAXKEY:
      return value(max_key{});
    default:
      return fail("unsupported BSON type 0x" +
                  std::to_string(static_cast<int>(bson_iter_type(&it))) + " in field '" +
                  bson_iter_key(&it) + "'");
  }
}

expected<document> read_document(bson_iter_t& it, int depth) {
  if (depth > max_depth) return fail("BSON nested too deeply");
  document doc;
  {
    // Counting first is cheaper than regrowing the field vector.
    bson_iter_t counter = it;
    std::size_t n = 0;
    while (bson_iter_next(&counter))
      ++n;
    doc.fields().reserve(n);
  }
  while (bson_iter_next(&it)) {
    auto v = read_value_at(it, depth);
    if (!v) return v.error();
    doc.append(std::string(bson_iter_key(&it), bson_iter_key_len(&it)), std::move(v).value());
  }
  if (it.err_off != 0) return fail("corrupt BSON at byte " + std::to_string(it.err_off));
  return doc;
}

}  // namespace

expected<value> read_value(bson_iter_t& it) {
  return read_value_at(it, 0);
}

expected<document> from_bson(std::span<const std::uint8_t> bytes) {
  // bson_init_static asserts on a null pointer; refuse anything shorter than an empty document.
  if (bytes.size() < 5) return fail("corrupt BSON: shorter than 5 bytes");
  bson_t b;
  if (!bson_init_static(&b, bytes.data(), bytes.size())) return fail("corrupt BSON: bad length");
  return from_bson(b);
}

expected<document> from_bson(const bson_t& doc) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &doc)) return fail("corrupt BSON: bad header");
  return read_document(it, 0);
}

void append_value(bson_t* out, std::string_view key, const value& v) {
  const char* k = key.data();
  const int kl = static_cast<int>(key.size());
  switch (v.kind()) {
    case type::double_:
      bson_append_double(out, k, kl, v.as<double>());
      break;
    case type::string: {
      const auto& s = v.as_string();
      bson_append_utf8(out, k, kl, s.data(), static_cast<int>(s.size()));
      break;
    }
    case type::document: {
      bson_t child;
      bson_append_document_begin(out, k, kl, &child);
      for (const auto& f : v.as_document())
        append_value(&child, f.name, f.val);
      bson_append_document_end(out, &child);
      break;
    }
    case type::array: {
      bson_t child;
      bson_append_array_begin(out, k, kl, &child);
      char buf[16];
      const char* idx = nullptr;
      std::uint32_t i = 0;
      for (const auto& item : v.as_array()) {
        const std::size_t len = bson_uint32_to_string(i++, &idx, buf, sizeof buf);
        append_value(&child, std::string_view(idx, len), item);
      }
      bson_append_array_end(out, &child);
      break;
    }
    case type::binary: {
      const auto& b = v.as<binary>();
      bson_append_binary(out, k, kl, static_cast<bson_subtype_t>(b.subtype), b.data.data(),
                         static_cast<std::uint32_t>(b.data.size()));
      break;
    }
    case type::undefined:
      bson_append_undefined(out, k, kl);
      break;
    case type::oid: {
      bson_oid_t o;
      std::memcpy(o.bytes, v.as<oid>().bytes.data(), 12);
      bson_append_oid(out, k, kl, &o);
      break;
    }
    case type::boolean:
      bson_append_bool(out, k, kl, v.as<bool>());
      break;
    case type::date:
      bson_append_date_time(out, k, kl, v.as<date_time>().millis);
      break;
    case type::null:
      bson_append_null(out, k, kl);
      break;
    case type::regex: {
      const auto& r = v.as<regex>();
      bson_append_regex(out, k, kl, r.pattern.c_str(), r.options.c_str());
      break;
    }
    case type::code:
      bson_append_code(out, k, kl, v.as<code>().text.c_str());
      break;
    case type::symbol: {
      const auto& s = v.as<symbol>().text;
      bson_append_symbol(out, k, kl, s.data(), static_cast<int>(s.size()));
      break;
    }
    case type::int32:
      bson_append_int32(out, k, kl, v.as<std::int32_t>());
      break;
    case type::timestamp:
      bson_append_timestamp(out, k, kl, v.as<timestamp>().t, v.as<timestamp>().i);
      break;
    case type::int64:
      bson_append_int64(out, k, kl, v.as<std::int64_t>());
      break;
    case type::decimal128: {
      const bson_decimal128_t d{v.as<decimal128>().low, v.as<decimal128>().high};
      bson_append_decimal128(out, k, kl, &d);
      break;
    }
    case type::min_key:
      bson_append_minkey(out, k, kl);
      break;
    case type::max_key:
      bson_append_maxkey(out, k, kl);
      break;
  }
}

bson_ptr to_bson(const document& doc) {
  bson_ptr out(bson_new());
  for (const auto& f : doc)
    append_value(out.get(), f.name, f.val);
  return out;
}

void append_bytes(const document& doc, std::vector<std::uint8_t>& out) {
  const bson_ptr b = to_bson(doc);
  const std::uint8_t* data = bson_get_data(b.get());
  out.insert(out.end(), data, data + b->len);
}

}  // namespace denormd::bson
