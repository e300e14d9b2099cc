#include "bson/value.h"

#include <bson/bson.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "bson/number_compare.h"

namespace denormd::bson {

namespace {

template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

// ---- oid ----

std::string oid::to_hex() const {
  bson_oid_t raw;
  static_assert(sizeof(raw.bytes) == sizeof(bytes));
  std::memcpy(raw.bytes, bytes.data(), sizeof(raw.bytes));
  char text[25];
  bson_oid_to_string(&raw, text);
  return std::string(text, 24);
}

// ---- decimal128 ----

std::string decimal128::to_string() const {
  bson_decimal128_t d{low, high};
  char buf[BSON_DECIMAL128_STRING];
  bson_decimal128_to_string(&d, buf);
  return buf;
}

double decimal128::to_double() const {
  const std::string s = to_string();
  if (s == "NaN" || s == "-NaN") return std::nan("");
  if (s == "Infinity") return HUGE_VAL;
  if (s == "-Infinity") return -HUGE_VAL;
  return std::strtod(s.c_str(), nullptr);
}

// ---- document ----

const value* document::get(std::string_view key) const {
  for (const auto& f : fields_) {
    if (f.name == key) return &f.val;
  }
  return nullptr;
}

value* document::get(std::string_view key) {
  for (auto& f : fields_) {
    if (f.name == key) return &f.val;
  }
  return nullptr;
}

const value* document::find_path(std::string_view dotted) const {
  const document* doc = this;
  const value* current = nullptr;
  while (true) {
    const auto dot = dotted.find('.');
    const std::string_view part = dotted.substr(0, dot);
    if (doc != nullptr) {
      current = doc->get(part);
    } else if (current != nullptr && current->is_array()) {
      // Only a canonical non-negative integer indexes an array.
      if (part.empty() || part.size() > 9 || (part.size() > 1 && part[0] == '0')) return nullptr;
      std::size_t index = 0;
      for (char c : part) {
        if (c < '0' || c > '9') return nullptr;
        index = index * 10 + static_cast<std::size_t>(c - '0');
      }
      const auto& arr = current->as_array();
      current = index < arr.size() ? &arr[index] : nullptr;
    } else {
      return nullptr;
    }
    if (current == nullptr || dot == std::string_view::npos) return current;
    dotted.remove_prefix(dot + 1);
    doc = current->is_document() ? &current->as_document() : nullptr;
  }
}

value& document::set(std::string_view key, value v) {
  if (value* existing = get(key)) {
    *existing = std::move(v);
    return *existing;
  }
  return append(std::string(key), std::move(v));
}

value& document::append(std::string key, value v) {
  fields_.push_back(field{std::move(key), std::move(v)});
  return fields_.back().val;
}

bool document::erase(std::string_view key) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->name == key) {
      fields_.erase(it);
      return true;
    }
  }
  return false;
}

bool document::operator==(const document& other) const {
  return fields_ == other.fields_;
}

// ---- value ----

type value::kind() const {
  static constexpr type kinds[] = {type::null,       type::boolean, type::int32,     type::int64,
                                   type::double_,    type::string,  type::document,  type::array,
                                   type::oid,        type::date,    type::timestamp, type::binary,
                                   type::decimal128, type::regex,   type::min_key,   type::max_key,
                                   type::undefined,  type::code,    type::symbol};
  static_assert(std::size(kinds) == std::variant_size_v<storage>);
  return kinds[v_.index()];
}

bool value::is_number() const {
  return is<std::int32_t>() || is<std::int64_t>() || is<double>() || is<decimal128>();
}

double value::to_double() const {
  if (is<std::int32_t>()) return as<std::int32_t>();
  if (is<std::int64_t>()) return static_cast<double>(as<std::int64_t>());
  if (is<double>()) return as<double>();
  if (is<decimal128>()) return as<decimal128>().to_double();
  return 0;
}

int canonical_rank(const value& v) {
  switch (v.kind()) {
    case type::min_key:
      return -1;
    case type::undefined:
      return 0;  // below null, as MongoDB's canonical order has it
    case type::null:
      return 5;
    case type::int32:
    case type::int64:
    case type::double_:
    case type::decimal128:
      return 10;
    case type::string:
    case type::symbol:
      return 15;
    case type::document:
      return 20;
    case type::array:
      return 25;
    case type::binary:
      return 30;
    case type::oid:
      return 35;
    case type::boolean:
      return 40;
    case type::date:
      return 45;
    case type::timestamp:
      return 47;
    case type::regex:
      return 50;
    case type::code:
      return 60;
    case type::max_key:
      return 127;
  }
  return 0;
}

int compare(const document& a, const document& b) {
  auto ia = a.begin();
  auto ib = b.begin();
  for (; ia != a.end() && ib != b.end(); ++ia, ++ib) {
    if (int c = three_way(canonical_rank(ia->val), canonical_rank(ib->val))) return c;
    if (int c = ia->name.compare(ib->name)) return c < 0 ? -1 : 1;
    if (int c = compare(ia->val, ib->val)) return c;
  }
  if (ia == a.end()) return ib == b.end() ? 0 : -1;
  return 1;
}

int compare(const value& a, const value& b) {
  if (int c = three_way(canonical_rank(a), canonical_rank(b))) return c;
  switch (a.kind()) {
    case type::min_key:
    case type::max_key:
    case type::null:
    case type::undefined:
      return 0;
    case type::int32:
    case type::int64:
    case type::double_:
    case type::decimal128:
      return compare_numbers(a, b);
    case type::string:
    case type::symbol: {
      const std::string& x = a.is_string() ? a.as_string() : a.as<symbol>().text;
      const std::string& y = b.is_string() ? b.as_string() : b.as<symbol>().text;
      const int c = x.compare(y);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case type::document:
      return compare(a.as_document(), b.as_document());
    case type::array: {
      const auto& x = a.as_array();
      const auto& y = b.as_array();
      for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
        if (int c = compare(x[i], y[i])) return c;
      }
      return three_way(x.size(), y.size());
    }
    case type::binary: {
      const auto& x = a.as<binary>();
      const auto& y = b.as<binary>();
      if (int c = three_way(x.data.size(), y.data.size())) return c;
      if (int c = three_way(x.subtype, y.subtype)) return c;
      return three_way(x.data, y.data);
    }
    case type::oid:
      return three_way(a.as<oid>().bytes, b.as<oid>().bytes);
    case type::boolean:
      return three_way(a.as<bool>(), b.as<bool>());
    case type::date:
      return three_way(a.as<date_time>().millis, b.as<date_time>().millis);
    case type::timestamp:
      return three_way(a.as<timestamp>(), b.as<timestamp>());
    case type::regex: {
      const auto& x = a.as<regex>();
      const auto& y = b.as<regex>();
      if (int c = x.pattern.compare(y.pattern)) return c < 0 ? -1 : 1;
      const int c = x.options.compare(y.options);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case type::code: {
      const int c = a.as<code>().text.compare(b.as<code>().text);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
  }
  return 0;
}

std::string_view type_name(type t) {
  switch (t) {
    case type::double_:
      return "double";
    case type::string:
      return "string";
    case type::document:
      return "object";
    case type::array:
      return "array";
    case type::binary:
      return "binData";
    case type::undefined:
      return "undefined";
    case type::oid:
      return "objectId";
    case type::boolean:
      return "bool";
    case type::date:
      return "date";
    case type::null:
      return "null";
    case type::regex:
      return "regex";
    case type::code:
      return "javascript";
    case type::symbol:
      return "symbol";
    case type::int32:
      return "int";
    case type::timestamp:
      return "timestamp";
    case type::int64:
      return "long";
    case type::decimal128:
      return "decimal";
    case type::min_key:
      return "minKey";
    case type::max_key:
      return "maxKey";
  }
  return "unknown";
}

}  // namespace denormd::bson
