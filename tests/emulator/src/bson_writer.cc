#include "bson_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

namespace mongo_emulator {

namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  const std::array<std::uint8_t, 4> b{
      static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
      static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 24)};
  out.insert(out.end(), b.begin(), b.end());
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v));
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
}

void patch_u32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  out.insert(out.end(), p, p + n);
}

// A C string as libbson's cstring appends take it: up to the first NUL.
void put_cstring(std::vector<std::uint8_t>& out, std::string_view s) {
  put_bytes(out, s.data(), std::min(s.size(), s.find('\0')));
  out.push_back(0);
}

// int32 length (with the terminator), bytes, NUL: strings, code, symbols.
void put_string(std::vector<std::uint8_t>& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size() + 1));
  put_bytes(out, s.data(), s.size());
  out.push_back(0);
}

void put_key(std::vector<std::uint8_t>& out, bson::type t, std::string_view key) {
  out.push_back(static_cast<std::uint8_t>(t));
  put_bytes(out, key.data(), key.size());
  out.push_back(0);
}

void put_fields(const bson::document& doc, std::vector<std::uint8_t>& out,
                const bson::array* splice);

void put_array(const bson::array& items, std::vector<std::uint8_t>& out, bool spliced) {
  const std::size_t start = begin_document(out);
  std::array<char, 16> digits{};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), i).ptr;
    const std::string_view key(digits.data(), static_cast<std::size_t>(end - digits.data()));
    const auto& item = items[i];
    if (spliced && item.is<bson::binary>() &&
        item.as<bson::binary>().subtype == raw_document_subtype) {
      put_key(out, bson::type::document, key);
      const auto& bytes = item.as<bson::binary>().data;
      out.insert(out.end(), bytes.begin(), bytes.end());
    } else {
      write_element(key, item, out);
    }
  }
  finish_document(out, start);
}

void put_fields(const bson::document& doc, std::vector<std::uint8_t>& out,
                const bson::array* splice) {
  for (const auto& f : doc) {
    if (splice != nullptr && f.val.is_array()) {
      put_key(out, bson::type::array, f.name);
      put_array(f.val.as_array(), out, &f.val.as_array() == splice);
    } else if (splice != nullptr && f.val.is_document()) {
      put_key(out, bson::type::document, f.name);
      const std::size_t start = begin_document(out);
      put_fields(f.val.as_document(), out, splice);
      finish_document(out, start);
    } else {
      write_element(f.name, f.val, out);
    }
  }
}

}  // namespace

std::size_t begin_document(std::vector<std::uint8_t>& out) {
  const std::size_t start = out.size();
  put_u32(out, 0);
  return start;
}

void finish_document(std::vector<std::uint8_t>& out, std::size_t start) {
  out.push_back(0);
  patch_u32(out, start, static_cast<std::uint32_t>(out.size() - start));
}

void write_document(const bson::document& doc, std::vector<std::uint8_t>& out,
                    const bson::array* splice) {
  const std::size_t start = begin_document(out);
  put_fields(doc, out, splice);
  finish_document(out, start);
}

void write_document_element(std::string_view key, const bson::document& d,
                            std::vector<std::uint8_t>& out) {
  put_key(out, bson::type::document, key);
  write_document(d, out);
}

void write_element(std::string_view key, const bson::value& v, std::vector<std::uint8_t>& out) {
  const bson::type t = v.kind();
  switch (t) {
    case bson::type::double_: {
      put_key(out, t, key);
      std::uint64_t bits = 0;
      const double d = v.as<double>();
      std::memcpy(&bits, &d, sizeof bits);
      put_u64(out, bits);
      return;
    }
    case bson::type::string:
      put_key(out, t, key);
      put_string(out, v.as_string());
      return;
    case bson::type::document:
      put_key(out, t, key);
      write_document(v.as_document(), out);
      return;
    case bson::type::array:
      put_key(out, t, key);
      put_array(v.as_array(), out, false);
      return;
    case bson::type::binary: {
      put_key(out, t, key);
      const auto& b = v.as<bson::binary>();
      const auto n = static_cast<std::uint32_t>(b.data.size());
      // The old binary subtype nests a second length, as libbson writes it.
      if (b.subtype == 0x02) {
        put_u32(out, n + 4);
        out.push_back(b.subtype);
        put_u32(out, n);
      } else {
        put_u32(out, n);
        out.push_back(b.subtype);
      }
      out.insert(out.end(), b.data.begin(), b.data.end());
      return;
    }
    case bson::type::undefined:
    case bson::type::null:
    case bson::type::min_key:
    case bson::type::max_key:
      put_key(out, t, key);
      return;
    case bson::type::oid:
      put_key(out, t, key);
      put_bytes(out, v.as<bson::oid>().bytes.data(), 12);
      return;
    case bson::type::boolean:
      put_key(out, t, key);
      out.push_back(v.as<bool>() ? 1 : 0);
      return;
    case bson::type::date:
      put_key(out, t, key);
      put_u64(out, static_cast<std::uint64_t>(v.as<bson::date_time>().millis));
      return;
    case bson::type::regex: {
      put_key(out, t, key);
      const auto& r = v.as<bson::regex>();
      put_cstring(out, r.pattern);
      // libbson keeps only the known flags, in this order.
      for (char c : std::string_view("ilmsux")) {
        if (r.options.find(c) != std::string::npos) out.push_back(static_cast<std::uint8_t>(c));
      }
      out.push_back(0);
      return;
    }
    case bson::type::code: {
      put_key(out, t, key);
      const auto& s = v.as<bson::code>().text;
      put_string(out, std::string_view(s).substr(0, std::min(s.size(), s.find('\0'))));
      return;
    }
    case bson::type::symbol:
      put_key(out, t, key);
      put_string(out, v.as<bson::symbol>().text);
      return;
    case bson::type::int32:
      put_key(out, t, key);
      put_u32(out, static_cast<std::uint32_t>(v.as<std::int32_t>()));
      return;
    case bson::type::timestamp:
      put_key(out, t, key);
      put_u32(out, v.as<bson::timestamp>().i);
      put_u32(out, v.as<bson::timestamp>().t);
      return;
    case bson::type::int64:
      put_key(out, t, key);
      put_u64(out, static_cast<std::uint64_t>(v.as<std::int64_t>()));
      return;
    case bson::type::decimal128:
      put_key(out, t, key);
      put_u64(out, v.as<bson::decimal128>().low);
      put_u64(out, v.as<bson::decimal128>().high);
      return;
  }
}

}  // namespace mongo_emulator
