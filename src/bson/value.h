#pragma once
// An owned, mutable BSON value tree. The planner, the query matcher and the test server all
// work on it; conversion to and from wire BSON lives in convert.h, Extended JSON in json.h.
// Plain value types: no shared state, thread-compatible.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace denormd::bson {

// BSON type codes as in the specification.
enum class type : std::uint8_t {
  double_ = 0x01,
  string = 0x02,
  document = 0x03,
  array = 0x04,
  binary = 0x05,
  undefined = 0x06,
  oid = 0x07,
  boolean = 0x08,
  date = 0x09,
  null = 0x0A,
  regex = 0x0B,
  code = 0x0D,
  symbol = 0x0E,
  int32 = 0x10,
  timestamp = 0x11,
  int64 = 0x12,
  decimal128 = 0x13,
  min_key = 0xFF,
  max_key = 0x7F,
};

struct null_t {
  bool operator==(const null_t&) const = default;
};
struct undefined_t {
  bool operator==(const undefined_t&) const = default;
};
struct min_key {
  bool operator==(const min_key&) const = default;
};
struct max_key {
  bool operator==(const max_key&) const = default;
};
struct oid {
  std::array<std::uint8_t, 12> bytes{};
  bool operator==(const oid&) const = default;
  std::string to_hex() const;
};
struct date_time {
  std::int64_t millis = 0;  // since the Unix epoch
  bool operator==(const date_time&) const = default;
};
struct timestamp {
  std::uint32_t t = 0;  // seconds
  std::uint32_t i = 0;  // ordinal within the second
  bool operator==(const timestamp&) const = default;
  auto operator<=>(const timestamp&) const = default;
};
struct binary {
  std::uint8_t subtype = 0;
  std::vector<std::uint8_t> data;
  bool operator==(const binary&) const = default;
};
struct decimal128 {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  bool operator==(const decimal128&) const = default;
  std::string to_string() const;
  double to_double() const;
};
struct regex {
  std::string pattern;
  std::string options;
  bool operator==(const regex&) const = default;
};
struct code {
  std::string text;
  bool operator==(const code&) const = default;
};
struct symbol {
  std::string text;
  bool operator==(const symbol&) const = default;
};

class value;
struct field;
using array = std::vector<value>;

// An ordered list of fields. Lookups are linear: documents are small and order matters.
class document {
 public:
  document() = default;
  document(std::initializer_list<field> fields);

  const value* get(std::string_view key) const;
  value* get(std::string_view key);
  bool contains(std::string_view key) const { return get(key) != nullptr; }
  // Follows a dotted path through sub-documents and numeric array indexes; no array
  // expansion (see query/path.h for MongoDB's matching semantics).
  const value* find_path(std::string_view dotted) const;

  // Replaces the value of an existing field in place, or appends.
  value& set(std::string_view key, value v);
  // Appends without looking for an existing field (for building from trusted input).
  value& append(std::string key, value v);
  bool erase(std::string_view key);

  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  std::vector<field>& fields() { return fields_; }
  const std::vector<field>& fields() const { return fields_; }
  auto begin() const { return fields_.begin(); }
  auto end() const { return fields_.end(); }
  auto begin() { return fields_.begin(); }
  auto end() { return fields_.end(); }

  // Strict structural equality: same field order, same types (1 != 1.0).
  bool operator==(const document& other) const;

 private:
  std::vector<field> fields_;
};

class value {
 public:
  using storage = std::variant<null_t, bool, std::int32_t, std::int64_t, double, std::string,
                               document, array, oid, date_time, timestamp, binary, decimal128,
                               regex, min_key, max_key, undefined_t, code, symbol>;

  value() : v_(null_t{}) {}
  value(null_t v) : v_(v) {}
  value(bool v) : v_(v) {}
  value(std::int32_t v) : v_(v) {}
  value(std::int64_t v) : v_(v) {}
  value(double v) : v_(v) {}
  value(std::string v) : v_(std::move(v)) {}
  value(std::string_view v) : v_(std::string(v)) {}
  value(const char* v) : v_(std::string(v)) {}
  value(document v) : v_(std::move(v)) {}
  value(array v) : v_(std::move(v)) {}
  value(oid v) : v_(v) {}
  value(date_time v) : v_(v) {}
  value(timestamp v) : v_(v) {}
  value(binary v) : v_(std::move(v)) {}
  value(decimal128 v) : v_(v) {}
  value(regex v) : v_(std::move(v)) {}
  value(min_key v) : v_(v) {}
  value(max_key v) : v_(v) {}
  value(undefined_t v) : v_(v) {}
  value(code v) : v_(std::move(v)) {}
  value(symbol v) : v_(std::move(v)) {}

  bson::type kind() const;
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  template <class T>
  const T& as() const {
    return std::get<T>(v_);
  }
  template <class T>
  T& as() {
    return std::get<T>(v_);
  }
  const storage& data() const { return v_; }
  storage& data() { return v_; }

  bool is_null() const { return is<null_t>(); }
  bool is_document() const { return is<document>(); }
  bool is_array() const { return is<array>(); }
  bool is_string() const { return is<std::string>(); }
  bool is_number() const;    // int32, int64, double or decimal128
  double to_double() const;  // numbers only; 0 otherwise
  const document& as_document() const { return as<document>(); }
  document& as_document() { return as<document>(); }
  const array& as_array() const { return as<array>(); }
  array& as_array() { return as<array>(); }
  const std::string& as_string() const { return as<std::string>(); }

  // Strict structural equality (types must match: 1 != 1.0). For MongoDB's equality use
  // compare(a, b) == 0.
  bool operator==(const value& other) const { return v_ == other.v_; }

 private:
  storage v_;
};

struct field {
  std::string name;
  value val;
  bool operator==(const field& other) const = default;
};

inline document::document(std::initializer_list<field> fields) : fields_(fields) {}

// MongoDB's sort order across types (MinKey < null < numbers < strings < documents < arrays
// < binary < ObjectId < bool < date < timestamp < regex < code < MaxKey), then by value.
// Numbers compare by exact value across int32/int64/double/decimal128 (number_compare.h).
int compare(const value& a, const value& b);
int compare(const document& a, const document& b);
// Orders values by compare(): sets and maps keyed by it hold 1, 1L and 1.0 as one key, as
// MongoDB's equality (one `_id`, one `$eq` match, one $group key) does.
struct value_less {
  bool operator()(const value& a, const value& b) const { return compare(a, b) < 0; }
  bool operator()(const value* a, const value* b) const { return compare(*a, *b) < 0; }
};
// The rank of a value's type in that order; values compare only within one rank in queries.
int canonical_rank(const value& v);

// The BSON type name as MongoDB spells it ("double", "string", "object", ...).
std::string_view type_name(bson::type t);

}  // namespace denormd::bson
