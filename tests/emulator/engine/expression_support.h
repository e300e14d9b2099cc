#pragma once
// What the operator families (expression_operators.cc, expression_math.cc, expression_string.cc,
// expression_convert.cc, expression_date.cc, expression_hash.cc) share: run-time error raising,
// MongoDB's type names and numeric coercions, and the argument parsers of the operator table.
// Internal to the engine.

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "expression_node.h"

namespace mongo_emulator::engine::ops {

using node = expression::node;
using evaluator = maybe_value (*)(const node&, evaluation&);

// MongoDB's error codes the operators share (ErrorCodes::BadValue, TypeMismatch, Overflow,
// ConversionFailure).
constexpr int bad_value = 2;
constexpr int type_mismatch = 14;
constexpr int overflow_code = 15;
constexpr int conversion_failure = 241;

// Throws expression_error (see expression.h).
[[noreturn]] void raise(std::string message, int code);

// typeName(): "missing" for a missing value.
std::string type_of(const maybe_value& v);
// Missing, null or undefined (Value::nullish).
bool nullish(const maybe_value& v);

inline maybe_value arg(const node& n, std::size_t i, evaluation& ev) {
  return evaluate_in(n.items[i], ev);
}

// A number that is a whole 32-bit value (Value::integral, then coerceToInt).
std::optional<std::int32_t> whole_int32(const denormd::bson::value& v);

enum class numeric_width { int32, int64, double_, decimal };
numeric_width width_of(const denormd::bson::value& v);
// Value::coerceToLong: doubles truncate (saturating here, where C++ would be undefined).
std::int64_t coerce_to_long(const denormd::bson::value& v);
// Value::createIntOrLong.
denormd::bson::value int_or_long(std::int64_t r);
// A double as MongoDB's StringBuilder streams it ("%g").
std::string double_g(double d);

// Value::coerceToString: numbers as MongoDB streams them, dates in ISO form, null and missing
// as ""; 16007 for other types.
std::string coerce_to_string(const maybe_value& v);

// TimeZone::formatDate: `millis` (UTC) shifted by `offset_minutes`, with MongoDB's
// %-specifiers; the format must have passed check_date_format.
std::string format_date(std::int64_t millis, std::string_view format, int offset_minutes = 0);
constexpr std::string_view iso_date_format = "%Y-%m-%dT%H:%M:%S.%LZ";
// The creation time an ObjectId holds (its first 4 bytes, seconds), in milliseconds.
std::int64_t object_id_millis(const denormd::bson::oid& id);
// TimeZone::validateToStringFormat (18535, 18536).
denormd::status check_date_format(std::string_view format);

struct op_spec;
using parser = denormd::status (*)(const op_spec&, const denormd::bson::value&, parse_scope&,
                                   node&);

struct op_spec {
  std::string_view name;
  parser parse;
  evaluator eval;
  std::size_t min_args = 0;
  std::size_t max_args = 0;
};

constexpr std::size_t any = std::numeric_limits<std::size_t>::max();

denormd::status add_item(const denormd::bson::value& spec, parse_scope& scope, node& n);

// `{$op: [a, b]}`, or `{$op: a}` for one argument, with the arity errors of MongoDB's
// ExpressionFixedArity (16020), ExpressionRangedArity (28667) and variadic operators (16021).
denormd::status parse_list(const op_spec& op, const denormd::bson::value& arg, parse_scope& scope,
                           node& n);

// Named arguments, in the order `names` gives them; absent optional ones stay null.
struct named_spec {
  std::vector<std::string_view> names;
  std::vector<int> missing_codes;  // per name; 0: optional
  int unknown_code;
};
denormd::expected<std::vector<const denormd::bson::value*>> named_args(
    const op_spec& op, const denormd::bson::value& arg, const named_spec& spec);

// Parses the named arguments into n.items in `spec`'s order (absent optional ones empty).
denormd::status parse_named_items(const op_spec& op, const denormd::bson::value& arg,
                                  const named_spec& spec, parse_scope& scope, node& n);

// The families' tables, searched by parse_operator after expression_operators.cc's own.
std::span<const op_spec> math_operators();
std::span<const op_spec> string_operators();
std::span<const op_spec> convert_operators();
std::span<const op_spec> date_operators();
std::span<const op_spec> hash_operators();

}  // namespace mongo_emulator::engine::ops
