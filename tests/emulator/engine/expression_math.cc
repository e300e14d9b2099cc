// Arithmetic operators past $add/$subtract/$multiply/$divide, as MongoDB 6.0's expression.cpp
// evaluates them: $mod, $abs, $round and $trunc (with `place`). Result types follow the inputs
// (an int32 stays int32 unless it no longer fits); null or missing operands give null.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "expression_support.h"
#include "numeric.h"
#include "value_text.h"

namespace mongo_emulator::engine::ops {

namespace bson = denormd::bson;

namespace {

// mongoSafeMod: x % -1 is 0 (INT_MIN % -1 would trap).
template <class T>
T safe_mod(T x, T y) {
  return y == -1 ? 0 : x % y;
}

// ExpressionMod: a decimal if either side is one; fmod when the dividend is a double or the
// divisor a double that is not a whole int32; else int64 if either side is one; else int32.
maybe_value eval_mod(const node& n, evaluation& ev) {
  const maybe_value l = arg(n, 0, ev);
  const maybe_value r = arg(n, 1, ev);
  if (l && r && l->is_number() && r->is_number()) {
    if (l->is<bson::decimal128>() || r->is<bson::decimal128>()) {
      const bson::decimal128 divisor = to_decimal128(*r);
      if (decimal_is_zero(divisor)) raise("can't $mod by zero", 16610);
      return bson::value(decimal_modulo(to_decimal128(*l), divisor));
    }
    if (r->to_double() == 0) raise("can't $mod by zero", 16610);
    if (l->is<double>() || (r->is<double>() && !whole_int32(*r)))
      return bson::value(std::fmod(l->to_double(), r->to_double()));
    if (l->is<std::int64_t>() || r->is<std::int64_t>())
      return bson::value(safe_mod(coerce_to_long(*l), coerce_to_long(*r)));
    return bson::value(safe_mod(static_cast<std::int32_t>(coerce_to_long(*l)),
                                static_cast<std::int32_t>(coerce_to_long(*r))));
  }
  if (nullish(l) || nullish(r)) return bson::value{};
  raise("$mod only supports numeric types, not " + type_of(l) + " and " + type_of(r), 16611);
}

// ExpressionAbs (an ExpressionSingleNumericArg).
maybe_value eval_abs(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  if (nullish(v)) return bson::value{};
  if (!v->is_number()) raise("$abs only supports numeric types, not " + type_of(v), 28765);
  if (v->is<double>()) return bson::value(std::fabs(v->as<double>()));
  if (v->is<bson::decimal128>()) {
    bson::decimal128 d = v->as<bson::decimal128>();
    d.high &= ~(1ULL << 63);
    return bson::value(d);
  }
  const std::int64_t x = coerce_to_long(*v);
  if (x == std::numeric_limits<std::int64_t>::min())
    raise("can't take $abs of long long min", 28680);
  const std::int64_t out = x < 0 ? -x : x;
  return v->is<std::int64_t>() ? bson::value(out) : int_or_long(out);
}

// The `place` of $round/$trunc, checked in MongoDB's order: coerceToLong (16004, 31109), a whole
// int32 (51082), then [-20, 100] (51083).
std::int64_t place_of(const bson::value& p, const std::string& op) {
  if (!p.is_number()) raise("can't convert from BSON type " + type_of(p) + " to long", 16004);
  if (p.is<double>() &&
      !(p.as<double>() >= -9223372036854775808.0 && p.as<double>() < 9223372036854775808.0))
    raise("Can't coerce out of range value " + double_g(p.as<double>()) + " to long", 31109);
  const std::int64_t place = coerce_to_long(p);
  if (!whole_int32(p)) raise("precision argument to  " + op + " must be a integral value", 51082);
  if (place < -20 || place > 100) {
    raise("cannot apply " + op + " with precision value " + std::to_string(place) +
              " value must be in [-20, 100]",
          51083);
  }
  return place;
}

// evaluateRoundOrTrunc: quantize to 10^-place through decimal128 (a double first becomes its
// nearest 34-digit decimal); integers are unchanged unless the place is negative.
template <decimal_rounding Mode>
maybe_value eval_round(const node& n, evaluation& ev) {
  const std::string op = Mode == decimal_rounding::half_even ? "$round" : "$trunc";
  const maybe_value v = arg(n, 0, ev);
  if (nullish(v)) return bson::value{};
  if (!v->is_number()) raise(op + " only supports numeric types, not " + type_of(v), 51081);
  std::int64_t place = 0;
  maybe_value p;
  if (n.items.size() > 1) {
    p = arg(n, 1, ev);
    if (nullish(p)) return bson::value{};
    place = place_of(*p, op);
  }
  const int exponent = static_cast<int>(-place);
  if (v->is<bson::decimal128>())
    return bson::value(decimal_quantize(v->as<bson::decimal128>(), exponent, Mode));
  if (v->is<double>()) {
    if (!std::isfinite(v->as<double>())) return v;
    return bson::value(decimal_to_double(decimal_quantize(to_decimal128(*v, 34), exponent, Mode)));
  }
  if (place >= 0) return v;
  const bson::decimal128 out = decimal_quantize(to_decimal128(*v), exponent, Mode);
  const double whole = decimal_to_double(out);
  if (decimal_is_nan(out) || !(whole >= -9223372036854775808.0 && whole < 9223372036854775808.0)) {
    raise("invalid conversion from Decimal128 result in " + op + " resulting from arguments: [" +
              value_text(*v) + ", " + value_text(*p) + "]",
          51080);
  }
  const std::int64_t r = decimal_to_int64(out);
  return v->is<std::int64_t>() ? bson::value(r) : int_or_long(r);
}

const op_spec table[] = {
    {"$mod", parse_list, eval_mod, 2, 2},
    {"$abs", parse_list, eval_abs, 1, 1},
    {"$round", parse_list, eval_round<decimal_rounding::half_even>, 1, 2},
    {"$trunc", parse_list, eval_round<decimal_rounding::toward_zero>, 1, 2},
};

}  // namespace

std::span<const op_spec> math_operators() {
  return table;
}

}  // namespace mongo_emulator::engine::ops
