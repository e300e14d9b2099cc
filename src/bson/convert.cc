#include "bson/convert.h"

#include <cstring>

namespace denormd::bson {

namespace {

constexpr int max_depth = 200;  // MongoDB nests documents at most 100 deep; be generous.

expected<document> read_document(bson_iter_t& it, int depth);

// The text of a UTF-8 string, code or symbol: `get` is the bson_iter_ accessor.
template <class Get>
std::string text_at(const bson_iter_t& it, Get get) {
  std::uint32_t len = 0;
  const char* s = get(&it, &len);
  return std::string(s, len);
}

// An embedded document, or an array (a document keyed "0", "1", ...).
expected<value> read_container_at(bson_iter_t& it, int depth) {
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

value binary_at(const bson_iter_t& it) {
  bson_subtype_t subtype{};
  std::uint32_t len = 0;
  const std::uint8_t* data = nullptr;
  bson_iter_binary(&it, &subtype, &len, &data);
  binary b;
  b.subtype = static_cast<std::uint8_t>(subtype);
  if (data != nullptr) b.data.assign(data, data + len);
  return value(std::move(b));
}

value oid_at(const bson_iter_t& it) {
  oid o;
  std::memcpy(o.bytes.data(), bson_iter_oid(&it)->bytes, 12);
  return value(o);
}

value regex_at(const bson_iter_t& it) {
  const char* options = nullptr;
  const char* pattern = bson_iter_regex(&it, &options);
  return value(regex{pattern ? pattern : "", options ? options : ""});
}

value timestamp_at(const bson_iter_t& it) {
  std::uint32_t t = 0;
  std::uint32_t i = 0;
  bson_iter_timestamp(&it, &t, &i);
  return value(timestamp{t, i});
}

value decimal128_at(const bson_iter_t& it) {
  bson_decimal128_t d{};
  bson_iter_decimal128(&it, &d);
  return value(decimal128{d.low, d.high});
}

expected<value> read_value_at(bson_iter_t& it, int depth) {
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_DOUBLE:
      return value(bson_iter_double(&it));
    case BSON_TYPE_UTF8:
      return value(text_at(it, bson_iter_utf8));
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
      return read_container_at(it, depth);
    case BSON_TYPE_BINARY:
      return binary_at(it);
    case BSON_TYPE_UNDEFINED:
      return value(undefined_t{});
    case BSON_TYPE_OID:
      return oid_at(it);
    case BSON_TYPE_BOOL:
      return value(bson_iter_bool(&it));
    case BSON_TYPE_DATE_TIME:
      return value(date_time{bson_iter_date_time(&it)});
    case BSON_TYPE_NULL:
      return value(null_t{});
    case BSON_TYPE_REGEX:
      return regex_at(it);
    case BSON_TYPE_CODE:
      return value(code{text_at(it, bson_iter_code)});
    case BSON_TYPE_SYMBOL:
      return value(symbol{text_at(it, bson_iter_symbol)});
    case BSON_TYPE_INT32:
      return value(bson_iter_int32(&it));
    case BSON_TYPE_TIMESTAMP:
      return timestamp_at(it);
    case BSON_TYPE_INT64:
      return value(static_cast<std::int64_t>(bson_iter_int64(&it)));
    case BSON_TYPE_DECIMAL128:
      return decimal128_at(it);
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

namespace {

// append_value's compound cases, each appending the field `k` (of length `kl`).
void append_utf8(bson_t* out, const char* k, int kl, const std::string& s) {
  bson_append_utf8(out, k, kl, s.data(), static_cast<int>(s.size()));
}

void append_document(bson_t* out, const char* k, int kl, const document& doc) {
  bson_t child;
  bson_append_document_begin(out, k, kl, &child);
  for (const auto& f : doc)
    append_value(&child, f.name, f.val);
  bson_append_document_end(out, &child);
}

void append_array(bson_t* out, const char* k, int kl, const array& items) {
  bson_t child;
  bson_append_array_begin(out, k, kl, &child);
  char buf[16];
  const char* idx = nullptr;
  std::uint32_t i = 0;
  for (const auto& item : items) {
    const std::size_t len = bson_uint32_to_string(i++, &idx, buf, sizeof buf);
    append_value(&child, std::string_view(idx, len), item);
  }
  bson_append_array_end(out, &child);
}

void append_binary(bson_t* out, const char* k, int kl, const binary& b) {
  bson_append_binary(out, k, kl, static_cast<bson_subtype_t>(b.subtype), b.data.data(),
                     static_cast<std::uint32_t>(b.data.size()));
}

void append_oid(bson_t* out, const char* k, int kl, const oid& id) {
  bson_oid_t o;
  std::memcpy(o.bytes, id.bytes.data(), 12);
  bson_append_oid(out, k, kl, &o);
}

void append_decimal128(bson_t* out, const char* k, int kl, const decimal128& d) {
  const bson_decimal128_t raw{d.low, d.high};
  bson_append_decimal128(out, k, kl, &raw);
}

}  // namespace

void append_value(bson_t* out, std::string_view key, const value& v) {
  const char* k = key.data();
  const int kl = static_cast<int>(key.size());
  switch (v.kind()) {
    case type::double_:
      bson_append_double(out, k, kl, v.as<double>());
      return;
    case type::string:
      return append_utf8(out, k, kl, v.as_string());
    case type::document:
      return append_document(out, k, kl, v.as_document());
    case type::array:
      return append_array(out, k, kl, v.as_array());
    case type::binary:
      return append_binary(out, k, kl, v.as<binary>());
    case type::undefined:
      bson_append_undefined(out, k, kl);
      return;
    case type::oid:
      return append_oid(out, k, kl, v.as<oid>());
    case type::boolean:
      bson_append_bool(out, k, kl, v.as<bool>());
      return;
    case type::date:
      bson_append_date_time(out, k, kl, v.as<date_time>().millis);
      return;
    case type::null:
      bson_append_null(out, k, kl);
      return;
    case type::regex:
      bson_append_regex(out, k, kl, v.as<regex>().pattern.c_str(), v.as<regex>().options.c_str());
      return;
    case type::code:
      bson_append_code(out, k, kl, v.as<code>().text.c_str());
      return;
    case type::symbol: {
      const auto& s = v.as<symbol>().text;
      bson_append_symbol(out, k, kl, s.data(), static_cast<int>(s.size()));
      return;
    }
    case type::int32:
      bson_append_int32(out, k, kl, v.as<std::int32_t>());
      return;
    case type::timestamp:
      bson_append_timestamp(out, k, kl, v.as<timestamp>().t, v.as<timestamp>().i);
      return;
    case type::int64:
      bson_append_int64(out, k, kl, v.as<std::int64_t>());
      return;
    case type::decimal128:
      return append_decimal128(out, k, kl, v.as<decimal128>());
    case type::min_key:
      bson_append_minkey(out, k, kl);
      return;
    case type::max_key:
      bson_append_maxkey(out, k, kl);
      return;
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
