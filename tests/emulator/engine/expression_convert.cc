// Type conversion as MongoDB 6.0's ExpressionConvert performs it: $convert ({input, to, onError,
// onNull}; `to` a type name or number) and its aliases $toInt, $toLong, $toDouble, $toDecimal,
// $toBool, $toString, $toObjectId, $toDate. Conversions the server does not support fail with
// ConversionFailure (241), as do values out of range or unparsable strings; `onError` catches
// exactly those. String to date (dateFromString) is not implemented (241 always). Also
// $bsonSize.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "bson/convert.h"
#include "expression_support.h"
#include "numeric.h"
#include "value_text.h"

namespace mongo_emulator::engine::ops {

namespace bson = denormd::bson;
using denormd::fail;

namespace {

constexpr int failed_to_parse = 9;
const std::string no_on_error = " in $convert with no onError value";

// BSON type codes $convert names (typeFromName, plus "missing" for EOO).
struct type_entry {
  int code;
  std::string_view name;
};
constexpr type_entry type_names[] = {
    {0, "missing"},    {1, "double"},      {2, "string"},    {3, "object"},
    {4, "array"},      {5, "binData"},     {6, "undefined"}, {7, "objectId"},
    {8, "bool"},       {9, "date"},        {10, "null"},     {11, "regex"},
    {12, "dbPointer"}, {13, "javascript"}, {14, "symbol"},   {15, "javascriptWithScope"},
    {16, "int"},       {17, "timestamp"},  {18, "long"},     {19, "decimal"},
    {-1, "minKey"},    {127, "maxKey"}};

std::string_view name_of(int code) {
  for (const auto& t : type_names) {
    if (t.code == code) return t.name;
  }
  return "";
}

// ExpressionConvert::computeTargetType.
int target_of(const bson::value& to) {
  if (to.is_string()) {
    for (const auto& t : type_names) {
      if (t.name == to.as_string()) return t.code;
    }
    raise("Unknown type name: " + to.as_string(), bad_value);
  }
  if (to.is_number()) {
    const auto code = whole_int32(to);
    if (!code) raise("In $convert, numeric 'to' argument is not an integer", failed_to_parse);
    if (name_of(*code).empty()) {
      raise("In $convert, numeric value for 'to' does not correspond to a BSON type: " +
                std::to_string(*code),
            failed_to_parse);
    }
    return *code;
  }
  raise("$convert's 'to' argument must be a string or number, but is " + type_of(to),
        failed_to_parse);
}

[[noreturn]] void unsupported(const bson::value& input, int target) {
  raise("Unsupported conversion from " + type_of(input) + " to " + std::string(name_of(target)) +
            no_on_error,
        conversion_failure);
}

[[noreturn]] void overflow(const std::string& shown) {
  raise("Conversion would overflow target type" + no_on_error + ": " + shown, conversion_failure);
}

[[noreturn]] void parse_failure(const std::string& text, const std::string& reason) {
  raise("Failed to parse number '" + text + "'" + no_on_error + ": " + reason, conversion_failure);
}

// NumberParser for integers in base 10: an optional sign, then digits only.
std::int64_t parse_integer(const std::string& text, std::int64_t min, std::int64_t max) {
  if (text.starts_with("0x") || text.starts_with("0X"))
    raise("Illegal hexadecimal input" + no_on_error + ": " + text, conversion_failure);
  std::size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const bool negative = i == 1 && text[0] == '-';
  if (i == text.size()) parse_failure(text, "No digits");
  std::uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') parse_failure(text, "Did not consume whole string.");
    if (__builtin_mul_overflow(magnitude, 10, &magnitude) ||
        __builtin_add_overflow(magnitude, static_cast<unsigned>(text[i] - '0'), &magnitude))
      parse_failure(text, "Overflow");
  }
  // The largest magnitude: max, or -min for a negative number.
  const std::uint64_t limit =
      negative ? static_cast<std::uint64_t>(-(min + 1)) + 1 : static_cast<std::uint64_t>(max);
  if (magnitude > limit) parse_failure(text, "Overflow");
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

double parse_double(const std::string& text) {
  if (text.starts_with("0x") || text.starts_with("0X"))
    raise("Illegal hexadecimal input" + no_on_error + ": " + text, conversion_failure);
  if (text.empty()) parse_failure(text, "Empty string");
  if (std::isspace(static_cast<unsigned char>(text[0]))) parse_failure(text, "Leading whitespace");
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) parse_failure(text, "Did not consume any digits");
  if (errno == ERANGE) parse_failure(text, "Out of range");
  if (end != text.c_str() + text.size()) parse_failure(text, "Did not consume whole string.");
  return d;
}

bson::decimal128 parse_decimal(const std::string& text) {
  if (text.starts_with("0x") || text.starts_with("0X"))
    raise("Illegal hexadecimal input" + no_on_error + ": " + text, conversion_failure);
  if (text.empty()) parse_failure(text, "Empty string");
  auto d = parse_decimal128(text);
  if (!d) parse_failure(text, "Failed to parse string to decimal");
  return *d;
}

// A double or decimal truncated toward zero into [min, max] (performCastDoubleToInt/Long,
// performCastDecimalToInt).
std::int64_t truncate_to(const bson::value& v, std::int64_t min, std::int64_t max) {
  const bool is_decimal = v.is<bson::decimal128>();
  const double d = is_decimal ? decimal_to_double(v.as<bson::decimal128>()) : v.as<double>();
  if (std::isnan(d))
    raise("Attempt to convert NaN value to integer type" + no_on_error, conversion_failure);
  if (std::isinf(d) && (!is_decimal || decimal_is_infinite(v.as<bson::decimal128>())))
    raise("Attempt to convert infinity value to integer type" + no_on_error, conversion_failure);
  const std::string shown = is_decimal ? decimal_text(v.as<bson::decimal128>()) : double_g(d);
  // For a decimal, truncate exactly before the range check (1E+30 is no int64).
  const double whole = is_decimal ? decimal_to_double(decimal_quantize(
                                        v.as<bson::decimal128>(), 0, decimal_rounding::toward_zero))
                                  : d;
  const bool in_range =
      max == std::numeric_limits<std::int64_t>::max()
          ? whole >= -9223372036854775808.0 && whole < 9223372036854775808.0
          : whole >= static_cast<double>(min) && whole <= static_cast<double>(max);
  if (!in_range || (is_decimal && std::isnan(whole))) overflow(shown);
  if (is_decimal) {
    return decimal_to_int64(
        decimal_quantize(v.as<bson::decimal128>(), 0, decimal_rounding::toward_zero));
  }
  return static_cast<std::int64_t>(std::trunc(d));
}

// performFormatDouble: MongoDB 6.0 streams the double ("%g"), with its own names for the
// special values.
std::string double_text(double d) {
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  if (std::isnan(d)) return "NaN";
  if (d == 0 && std::signbit(d)) return "-0";
  return double_g(d);
}

bson::value to_int(const bson::value& v) {
  constexpr std::int64_t lo = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t hi = std::numeric_limits<std::int32_t>::max();
  if (v.is<std::int32_t>()) return v;
  if (v.is<bool>()) return bson::value(std::int32_t{v.as<bool>() ? 1 : 0});
  if (v.is<std::int64_t>()) {
    if (v.as<std::int64_t>() < lo || v.as<std::int64_t>() > hi) overflow("");
    return bson::value(static_cast<std::int32_t>(v.as<std::int64_t>()));
  }
  if (v.is<double>() || v.is<bson::decimal128>())
    return bson::value(static_cast<std::int32_t>(truncate_to(v, lo, hi)));
  if (v.is_string())
    return bson::value(static_cast<std::int32_t>(parse_integer(v.as_string(), lo, hi)));
  unsupported(v, 16);
}

bson::value to_long(const bson::value& v) {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  if (v.is<std::int64_t>()) return v;
  if (v.is<std::int32_t>()) return bson::value(std::int64_t{v.as<std::int32_t>()});
  if (v.is<bool>()) return bson::value(std::int64_t{v.as<bool>() ? 1 : 0});
  if (v.is<bson::date_time>()) return bson::value(v.as<bson::date_time>().millis);
  if (v.is<double>() || v.is<bson::decimal128>()) return bson::value(truncate_to(v, lo, hi));
  if (v.is_string()) return bson::value(parse_integer(v.as_string(), lo, hi));
  unsupported(v, 18);
}

bson::value to_double(const bson::value& v) {
  if (v.is<double>()) return v;
  if (v.is<std::int32_t>() || v.is<std::int64_t>()) return bson::value(v.to_double());
  if (v.is<bool>()) return bson::value(v.as<bool>() ? 1.0 : 0.0);
  if (v.is<bson::date_time>())
    return bson::value(static_cast<double>(v.as<bson::date_time>().millis));
  if (v.is<bson::decimal128>()) {
    const auto& d = v.as<bson::decimal128>();
    const double x = decimal_to_double(d);
    if (std::isinf(x) && !decimal_is_infinite(d)) overflow(decimal_text(d));
    return bson::value(x);
  }
  if (v.is_string()) return bson::value(parse_double(v.as_string()));
  unsupported(v, 1);
}

bson::value to_decimal(const bson::value& v) {
  if (v.is<bson::decimal128>()) return v;
  if (v.is_number()) return bson::value(to_decimal128(v, 15));  // Decimal128(double): 15 digits
  if (v.is<bool>())
    return bson::value(to_decimal128(bson::value(std::int32_t{v.as<bool>() ? 1 : 0})));
  if (v.is<bson::date_time>())
    return bson::value(to_decimal128(bson::value(v.as<bson::date_time>().millis)));
  if (v.is_string()) return bson::value(parse_decimal(v.as_string()));
  unsupported(v, 19);
}

bson::value to_string(const bson::value& v) {
  if (v.is_string()) return v;
  if (v.is<double>()) return bson::value(double_text(v.as<double>()));
  if (v.is<bool>()) return bson::value(std::string(v.as<bool>() ? "true" : "false"));
  if (v.is<bson::oid>()) return bson::value(v.as<bson::oid>().to_hex());
  if (v.is_number() || v.is<bson::date_time>()) return bson::value(coerce_to_string(v));
  unsupported(v, 2);
}

bson::value to_object_id(const bson::value& v) {
  if (v.is<bson::oid>()) return v;
  if (!v.is_string()) unsupported(v, 7);
  const std::string& s = v.as_string();
  const std::string prefix = "Failed to parse objectId '" + s + "'" + no_on_error + ": ";
  if (s.size() != 24) {
    raise(prefix + "Invalid string length for parsing to OID, expected 24 but found " +
              std::to_string(s.size()),
          conversion_failure);
  }
  bson::oid out;
  for (std::size_t i = 0; i < 24; ++i) {
    const char c = s[i];
    const int nibble = c >= '0' && c <= '9'   ? c - '0'
                       : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
    if (nibble < 0)
      raise(prefix + "Invalid character found in hex string: " + s, conversion_failure);
    out.bytes[i / 2] = static_cast<std::uint8_t>(out.bytes[i / 2] * 16 + nibble);
  }
  return bson::value(out);
}

bson::value to_date(const bson::value& v) {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  if (v.is<bson::date_time>()) return v;
  if (v.is<std::int64_t>()) return bson::value(bson::date_time{v.as<std::int64_t>()});
  if (v.is<double>() || v.is<bson::decimal128>())
    return bson::value(bson::date_time{truncate_to(v, lo, hi)});
  if (v.is<bson::timestamp>())
    return bson::value(bson::date_time{std::int64_t{v.as<bson::timestamp>().t} * 1000});
  if (v.is<bson::oid>()) return bson::value(bson::date_time{object_id_millis(v.as<bson::oid>())});
  if (v.is_string()) {
    raise("Error parsing date string '" + v.as_string() +
              "': mongo-emulator does not implement $dateFromString",
          conversion_failure);
  }
  unsupported(v, 9);
}

// performConversion for a non-null input.
bson::value convert(const bson::value& v, int target) {
  switch (target) {
    case 1:
      return to_double(v);
    case 2:
      return to_string(v);
    case 7:
      return to_object_id(v);
    case 8:
      return bson::value(truthy(v));
    case 9:
      return to_date(v);
    case 16:
      return to_int(v);
    case 18:
      return to_long(v);
    case 19:
      return to_decimal(v);
    default:
      unsupported(v, target);
  }
}

// $convert: items [input, to, onError, onNull] (absent optional ones empty).
maybe_value eval_convert(const node& n, evaluation& ev) {
  const maybe_value to = arg(n, 1, ev);
  const maybe_value input = arg(n, 0, ev);
  const std::optional<int> target = nullish(to) ? std::nullopt : std::optional(target_of(*to));
  if (nullish(input)) return n.items[3].tree() != nullptr ? arg(n, 3, ev) : bson::value{};
  if (!target) return bson::value{};
  try {
    return convert(*input, *target);
  } catch (const expression_error& e) {
    if (e.code() != conversion_failure || n.items[2].tree() == nullptr) throw;
  }
  return arg(n, 2, ev);
}

denormd::status parse_convert(const op_spec&, const bson::value& arg, parse_scope& scope, node& n) {
  if (!arg.is_document()) {
    return fail("$convert expects an object of named arguments but found: " +
                    std::string(bson::type_name(arg.kind())),
                failed_to_parse);
  }
  const bson::value* parts[4] = {nullptr, nullptr, nullptr, nullptr};
  static constexpr std::string_view names[4] = {"input", "to", "onError", "onNull"};
  for (const auto& f : arg.as_document()) {
    const auto* it = std::find(std::begin(names), std::end(names), f.name);
    if (it == std::end(names))
      return fail("$convert found an unknown argument: " + f.name, failed_to_parse);
    parts[it - std::begin(names)] = &f.val;
  }
  if (parts[0] == nullptr) return fail("Missing 'input' parameter to $convert", failed_to_parse);
  if (parts[1] == nullptr) return fail("Missing 'to' parameter to $convert", failed_to_parse);
  for (const bson::value* p : parts) {
    if (p == nullptr) {
      n.items.emplace_back();
    } else if (auto s = add_item(*p, scope, n); !s) {
      return s;
    }
  }
  return {};
}

// The aliases ($toInt: ...): {$convert: {input: <arg>, to: <type>}}.
template <int Target>
maybe_value eval_alias(const node& n, evaluation& ev) {
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  return convert(*input, Target);
}

denormd::status parse_alias(const op_spec& op, const bson::value& arg, parse_scope& scope,
                            node& n) {
  const std::size_t count = arg.is_array() ? arg.as_array().size() : 1;
  if (count != 1) {
    return fail(std::string(op.name) + " requires a single argument, got " + std::to_string(count),
                50723);
  }
  return add_item(arg.is_array() ? arg.as_array().front() : arg, scope, n);
}

// $bsonSize (ExpressionBsonSize, 4.4+): a document's size as BSON, an int32; null for
// nullish; 31393 for anything else. MongoDB files it with the object operators; it is here
// as the one operator that measures a value's encoding.
maybe_value eval_bson_size(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  if (nullish(v)) return bson::value{};
  if (!v->is_document()) raise("$bsonSize requires a document input, found: " + type_of(v), 31393);
  return bson::value(static_cast<std::int32_t>(bson::to_bson(v->as_document())->len));
}

const op_spec table[] = {
    {"$convert", parse_convert, eval_convert},   {"$toDouble", parse_alias, eval_alias<1>},
    {"$toString", parse_alias, eval_alias<2>},   {"$toObjectId", parse_alias, eval_alias<7>},
    {"$toBool", parse_alias, eval_alias<8>},     {"$toDate", parse_alias, eval_alias<9>},
    {"$toInt", parse_alias, eval_alias<16>},     {"$toLong", parse_alias, eval_alias<18>},
    {"$toDecimal", parse_alias, eval_alias<19>}, {"$bsonSize", parse_list, eval_bson_size, 1, 1},
};

}  // namespace

std::span<const op_spec> convert_operators() {
  return table;
}

}  // namespace mongo_emulator::engine::ops
