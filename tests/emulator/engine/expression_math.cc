// Arithmetic as MongoDB 6.0's expression.cpp evaluates it (not SafeNum: int64 overflow widens to
// double): $add, $subtract, $multiply, $divide, $mod, $abs, $round and $trunc (with `place`).
// Result types follow the inputs (an int32 stays int32 unless it no longer fits); null or
// missing operands give null.

#include <algorithm>
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

// $add's running total: a long, double and decimal sum and the widest type seen; the long sum
// moves to the double one when it would overflow (AddState).
class add_state {
 public:
  void add(const bson::value& operand) {
    const numeric_width old = width_;
    bson::value v = operand;
    if (operand.is<bson::date_time>()) {
      if (is_date_) raise("only one date allowed in an $add expression", 16612);
      is_date_ = true;
      v = bson::value(operand.as<bson::date_time>().millis);
    } else {
      width_ = std::max(width_, width_of(operand));
    }
    if (old != width_) {
      if (width_ == numeric_width::double_) {
        double_total_ = static_cast<double>(long_total_);
      } else if (width_ == numeric_width::decimal) {
        decimal_total_ = old == numeric_width::double_
                             ? to_decimal128(bson::value(double_total_), 34)
                             : to_decimal128(bson::value(long_total_));
      }
    }
    switch (width_) {
      case numeric_width::int32:
      case numeric_width::int64: {
        std::int64_t sum = 0;
        if (__builtin_add_overflow(long_total_, coerce_to_long(v), &sum)) {
          width_ = numeric_width::double_;
          double_total_ = static_cast<double>(long_total_) + v.to_double();
        } else {
          long_total_ = sum;
        }
        break;
      }
      case numeric_width::double_:
        double_total_ += v.to_double();
        break;
      case numeric_width::decimal:
        decimal_total_ = decimal_arithmetic(decimal_op::add, decimal_total_, to_decimal128(v));
        break;
    }
  }

  bson::value result() const {
    if (is_date_) {
      switch (width_) {
        case numeric_width::int32:
        case numeric_width::int64:
          return bson::value(bson::date_time{long_total_});
        case numeric_width::double_:
          // The upper bound is exclusive: 2^63 - 1 rounds up to 2^63 as a double.
          if (!(double_total_ >= -9223372036854775808.0 && double_total_ < 9223372036854775808.0))
            raise("date overflow in $add", overflow_code);
          return bson::value(bson::date_time{std::llround(double_total_)});
        case numeric_width::decimal:
          return bson::value(bson::date_time{decimal_to_int64(decimal_total_)});
      }
    }
    switch (width_) {
      case numeric_width::int32:
        return int_or_long(long_total_);
      case numeric_width::int64:
        return bson::value(long_total_);
      case numeric_width::double_:
        return bson::value(double_total_);
      case numeric_width::decimal:
        break;
    }
    return bson::value(decimal_total_);
  }

 private:
  std::int64_t long_total_ = 0;
  double double_total_ = 0;
  bson::decimal128 decimal_total_{0, 0x3040000000000000ULL};  // 0E+0
  numeric_width width_ = numeric_width::int32;
  bool is_date_ = false;
};

maybe_value eval_add(const node& n, evaluation& ev) {
  add_state state;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const maybe_value v = arg(n, i, ev);
    // A null or missing operand makes null at once, even before a later bad operand.
    if (nullish(v)) return bson::value{};
    if (!v->is_number() && !v->is<bson::date_time>())
      raise("$add only supports numeric or date types, not " + type_of(v), type_mismatch);
    state.add(*v);
  }
  return state.result();
}

maybe_value eval_subtract(const node& n, evaluation& ev) {
  const maybe_value l = arg(n, 0, ev);
  const maybe_value r = arg(n, 1, ev);
  if (l && r && l->is_number() && r->is_number()) {
    switch (std::max(width_of(*l), width_of(*r))) {
      case numeric_width::decimal:
        return bson::value(
            decimal_arithmetic(decimal_op::subtract, to_decimal128(*l), to_decimal128(*r)));
      case numeric_width::double_:
        return bson::value(l->to_double() - r->to_double());
      case numeric_width::int64: {
        std::int64_t out = 0;
        if (__builtin_sub_overflow(coerce_to_long(*l), coerce_to_long(*r), &out))
          return bson::value(l->to_double() - r->to_double());
        return bson::value(out);
      }
      case numeric_width::int32:
        return int_or_long(coerce_to_long(*l) - coerce_to_long(*r));
    }
  }
  if (nullish(l) || nullish(r)) return bson::value{};
  if (l->is<bson::date_time>()) {
    const std::int64_t millis = l->as<bson::date_time>().millis;
    // Wrapping like Date_t's arithmetic rather than undefined behaviour.
    const auto minus = [](std::int64_t a, std::int64_t b) {
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) -
                                       static_cast<std::uint64_t>(b));
    };
    if (r->is<bson::date_time>())
      return bson::value(minus(millis, r->as<bson::date_time>().millis));
    if (r->is_number()) return bson::value(bson::date_time{minus(millis, coerce_to_long(*r))});
    raise("can't $subtract " + type_of(r) + " from Date", type_mismatch);
  }
  raise("can't $subtract " + type_of(r) + " from " + type_of(l), type_mismatch);
}

// $multiply's product: a long and a double product in parallel while the inputs are integers,
// a decimal one from the first decimal (MultiplyState).
maybe_value eval_multiply(const node& n, evaluation& ev) {
  double double_product = 1;
  std::int64_t long_product = 1;
  bson::decimal128 decimal_product{};
  numeric_width width = numeric_width::int32;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const maybe_value v = arg(n, i, ev);
    if (nullish(v)) return bson::value{};
    if (!v->is_number())
      raise("$multiply only supports numeric types, not " + type_of(v), type_mismatch);
    const numeric_width old = width;
    width = std::max(width, width_of(*v));
    if (width == numeric_width::decimal) {
      if (old != numeric_width::decimal) {
        decimal_product = old == numeric_width::double_
                              ? to_decimal128(bson::value(double_product), 15)
                              : to_decimal128(bson::value(long_product));
      }
      decimal_product =
          decimal_arithmetic(decimal_op::multiply, decimal_product, to_decimal128(*v));
      continue;
    }
    double_product *= v->to_double();
    if (width != numeric_width::double_) {
      // Integers only so far: an overflowing long product is abandoned for the double one.
      if (__builtin_mul_overflow(long_product, coerce_to_long(*v), &long_product))
        width = numeric_width::double_;
    }
  }
  switch (width) {
    case numeric_width::double_:
      return bson::value(double_product);
    case numeric_width::int64:
      return bson::value(long_product);
    case numeric_width::int32:
      return int_or_long(long_product);
    case numeric_width::decimal:
      break;
  }
  return bson::value(decimal_product);
}

maybe_value eval_divide(const node& n, evaluation& ev) {
  const maybe_value l = arg(n, 0, ev);
  const maybe_value r = arg(n, 1, ev);
  if (l && r && l->is_number() && r->is_number()) {
    // A decimal result if, and only if, either side is a decimal; a double otherwise.
    if (l->is<bson::decimal128>() || r->is<bson::decimal128>()) {
      const bson::decimal128 denominator = to_decimal128(*r);
      if (decimal_is_zero(denominator)) raise("can't $divide by zero", bad_value);
      return bson::value(decimal_arithmetic(decimal_op::divide, to_decimal128(*l), denominator));
    }
    if (r->to_double() == 0.0) raise("can't $divide by zero", bad_value);
    return bson::value(l->to_double() / r->to_double());
  }
  if (nullish(l) || nullish(r)) return bson::value{};
  raise("$divide only supports numeric types, not " + type_of(l) + " and " + type_of(r),
        type_mismatch);
}

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
    {"$add", parse_list, eval_add, 0, any},
    {"$subtract", parse_list, eval_subtract, 2, 2},
    {"$multiply", parse_list, eval_multiply, 0, any},
    {"$divide", parse_list, eval_divide, 2, 2},
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
