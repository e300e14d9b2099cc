#include "numeric.h"

#include <bson/bson.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <decimal/decimal>
#include <limits>
#include <string>

#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;

namespace {

bool is_integral(const bson::value& v) {
  return v.is<std::int32_t>() || v.is<std::int64_t>();
}

std::int64_t as_int64(const bson::value& v) {
  return v.is<std::int32_t>() ? v.as<std::int32_t>() : v.as<std::int64_t>();
}

// An int32 result stays int32 when it fits, as SafeNum does for int32 operands.
bson::value narrow(std::int64_t r) {
  if (r >= INT32_MIN && r <= INT32_MAX) return bson::value(static_cast<std::int32_t>(r));
  return bson::value(r);
}

// GCC's decimal128 is IEEE 754-2008 BID on x86-64, the encoding BSON uses, so values move
// between the two as their 16 bytes (low word first).
static_assert(std::endian::native == std::endian::little);
using dec = std::decimal::decimal128;

dec to_dec(const bson::decimal128& d) {
  std::decimal::decimal128::__decfloat128 raw;
  static_assert(sizeof raw == sizeof d.low + sizeof d.high);
  std::uint64_t words[2] = {d.low, d.high};
  std::memcpy(&raw, words, sizeof raw);
  return dec(raw);
}

bson::decimal128 from_dec(dec d) {
  const auto raw = d.__getval();
  std::uint64_t words[2];
  std::memcpy(words, &raw, sizeof words);
  return {words[0], words[1]};
}

bson::decimal128 parse_decimal(const char* text) {
  bson_decimal128_t d;
  if (!bson_decimal128_from_string(text, &d)) bson_decimal128_from_string("NaN", &d);
  return {d.low, d.high};
}

}  // namespace

bson::decimal128 to_decimal128(const bson::value& v, int digits) {
  if (v.is<bson::decimal128>()) return v.as<bson::decimal128>();
  if (is_integral(v)) return parse_decimal(std::to_string(as_int64(v)).c_str());
  const double x = v.to_double();
  if (std::isnan(x)) return parse_decimal("NaN");
  if (std::isinf(x)) return parse_decimal(x > 0 ? "Infinity" : "-Infinity");
  char text[64];
  std::snprintf(text, sizeof text, "%.*e", digits - 1, x);
  if (digits < 34) return parse_decimal(text);  // quantized: trailing zeros are kept
  // The nearest 34-digit decimal, without the zeros an exact value does not need (3.5 is
  // 35E-1, not 3.500...0).
  std::string t(text);
  const auto e = t.find('e');
  auto end = e;
  while (end > 0 && t[end - 1] == '0')
    --end;
  if (end > 0 && t[end - 1] == '.') --end;
  t.erase(end, e - end);
  return parse_decimal(t.c_str());
}

std::optional<bson::value> arithmetic(arithmetic_op op, const bson::value& a,
                                      const bson::value& b) {
  if (a.is<bson::decimal128>() || b.is<bson::decimal128>()) {
    const dec x = to_dec(to_decimal128(a));
    const dec y = to_dec(to_decimal128(b));
    return bson::value(from_dec(op == arithmetic_op::add ? x + y : x * y));
  }
  if (a.is<double>() || b.is<double>()) {
    const double x = a.to_double();
    const double y = b.to_double();
    return bson::value(op == arithmetic_op::add ? x + y : x * y);
  }
  const std::int64_t x = as_int64(a);
  const std::int64_t y = as_int64(b);
  std::int64_t r = 0;
  const bool overflow = op == arithmetic_op::add ? __builtin_add_overflow(x, y, &r)
                                                 : __builtin_mul_overflow(x, y, &r);
  if (a.is<std::int32_t>() && b.is<std::int32_t>()) {
    // Two int32s never overflow int64; the result widens only when it leaves int32.
    return narrow(r);
  }
  if (overflow) return std::nullopt;
  return bson::value(r);
}

bson::decimal128 decimal_arithmetic(decimal_op op, const bson::decimal128& a,
                                    const bson::decimal128& b) {
  const dec x = to_dec(a);
  const dec y = to_dec(b);
  switch (op) {
    case decimal_op::add:
      return from_dec(x + y);
    case decimal_op::subtract:
      return from_dec(x - y);
    case decimal_op::multiply:
      return from_dec(x * y);
    case decimal_op::divide:
      return from_dec(x / y);
  }
  return from_dec(x);
}

bool decimal_is_zero(const bson::decimal128& d) {
  return to_dec(d) == dec(0);
}

std::int64_t decimal_to_int64(const bson::decimal128& d) {
  const dec x = to_dec(d);
  if (x != x) return INT64_MIN;  // NaN
  if (x >= dec(9223372036854775807LL)) return INT64_MAX;
  if (x <= dec(INT64_MIN)) return INT64_MIN;
  // decimal128_to_long_long truncates; round the remainder half to even.
  std::int64_t whole = std::decimal::decimal128_to_long_long(x);
  const dec rest = x - dec(whole);
  const dec half = dec(5) / dec(10);
  if (rest > half || (rest == half && (whole % 2) != 0)) ++whole;
  if (rest < -half || (rest == -half && (whole % 2) != 0)) --whole;
  return whole;
}

namespace {

__extension__ typedef unsigned __int128 u128;

// A finite decimal128 as sign, coefficient and exponent (BID encoding; a coefficient past
// 10^34 is non-canonical and reads as zero, as IEEE 754 says).
struct decimal_parts {
  bool negative = false;
  u128 coefficient = 0;
  int exponent = 0;
};

constexpr int exponent_bias = 6176;

u128 power_of_ten(int n) {
  u128 p = 1;
  for (int i = 0; i < n; ++i)
    p *= 10;
  return p;
}

const u128 ten_to_34 = power_of_ten(34);

decimal_parts decode(const bson::decimal128& d) {
  decimal_parts p;
  p.negative = (d.high >> 63) != 0;
  if (((d.high >> 61) & 3) == 3) {
    p.exponent = static_cast<int>((d.high >> 47) & 0x3FFF) - exponent_bias;
    return p;  // the large-coefficient form: always past 10^34, so zero
  }
  p.exponent = static_cast<int>((d.high >> 49) & 0x3FFF) - exponent_bias;
  p.coefficient = (static_cast<u128>(d.high & 0x1FFFFFFFFFFFFULL) << 64) | d.low;
  if (p.coefficient >= ten_to_34) p.coefficient = 0;
  return p;
}

bson::decimal128 encode(const decimal_parts& p) {
  const auto biased = static_cast<std::uint64_t>(p.exponent + exponent_bias);
  std::uint64_t high = static_cast<std::uint64_t>(p.coefficient >> 64) | (biased << 49);
  if (p.negative) high |= 1ULL << 63;
  return {static_cast<std::uint64_t>(p.coefficient), high};
}

bool is_special(const bson::decimal128& d) {
  return ((d.high >> 59) & 0xF) == 0xF;  // combination field 1111x: infinity or NaN
}

}  // namespace

bool decimal_is_nan(const bson::decimal128& d) {
  return ((d.high >> 58) & 0x1F) == 0x1F;
}

bool decimal_is_infinite(const bson::decimal128& d) {
  return ((d.high >> 58) & 0x1F) == 0x1E;
}

bson::decimal128 decimal_quantize(const bson::decimal128& d, int exponent, decimal_rounding mode) {
  if (is_special(d)) return decimal_is_nan(d) ? parse_decimal("NaN") : d;
  decimal_parts p = decode(d);
  if (p.exponent >= exponent) {
    const int shift = p.exponent - exponent;
    if (p.coefficient != 0 && (shift > 33 || p.coefficient * power_of_ten(shift) >= ten_to_34))
      return parse_decimal("NaN");
    p.coefficient = p.coefficient == 0 ? 0 : p.coefficient * power_of_ten(shift);
  } else {
    const int shift = exponent - p.exponent;
    u128 quotient = 0;
    u128 remainder = p.coefficient;
    u128 divisor = 0;  // 0: 10^shift is past any coefficient
    if (shift <= 38) {
      divisor = power_of_ten(shift);
      quotient = p.coefficient / divisor;
      remainder = p.coefficient % divisor;
    }
    if (mode == decimal_rounding::half_even && divisor != 0) {
      const u128 twice = remainder * 2;
      if (twice > divisor || (twice == divisor && (quotient % 2) == 1)) ++quotient;
    }
    p.coefficient = quotient;
    if (p.coefficient >= ten_to_34) return parse_decimal("NaN");
  }
  p.exponent = exponent;
  return encode(p);
}

bson::decimal128 decimal_modulo(const bson::decimal128& a, const bson::decimal128& b) {
  if (is_special(a) || is_special(b) || decimal_is_zero(b)) {
    if (decimal_is_infinite(b) && !is_special(a)) return a;
    return parse_decimal("NaN");
  }
  const decimal_parts x = decode(a);
  const decimal_parts y = decode(b);
  const int exponent = std::min(x.exponent, y.exponent);
  const int dx = x.exponent - exponent;
  const int dy = y.exponent - exponent;
  const auto fits = [](u128 c, int shift) {
    return shift <= 38 && (c == 0 || c <= (~static_cast<u128>(0)) / power_of_ten(shift));
  };
  if (!fits(x.coefficient, dx) || !fits(y.coefficient, dy)) {
    const double r = std::fmod(decimal_to_double(a), decimal_to_double(b));
    return to_decimal128(bson::value(r), 34);
  }
  decimal_parts out;
  out.negative = x.negative;
  out.coefficient = (x.coefficient * power_of_ten(dx)) % (y.coefficient * power_of_ten(dy));
  out.exponent = exponent;
  return encode(out);
}

std::string decimal_text(const bson::decimal128& d) {
  bson_decimal128_t raw{d.low, d.high};
  char text[BSON_DECIMAL128_STRING];
  bson_decimal128_to_string(&raw, text);
  return text;
}

double decimal_to_double(const bson::decimal128& d) {
  return std::strtod(decimal_text(d).c_str(), nullptr);
}

std::optional<bson::decimal128> parse_decimal128(const std::string& text) {
  bson_decimal128_t d;
  if (!bson_decimal128_from_string(text.c_str(), &d)) return std::nullopt;
  return bson::decimal128{d.low, d.high};
}

bson::value bitwise(bitwise_op op, const bson::value& a, const bson::value& b) {
  const std::int64_t x = as_int64(a);
  const std::int64_t y = as_int64(b);
  std::int64_t r = op == bitwise_op::and_ ? (x & y) : op == bitwise_op::or_ ? (x | y) : (x ^ y);
  if (a.is<std::int32_t>() && b.is<std::int32_t>()) {
    return bson::value(static_cast<std::int32_t>(r));
  }
  return bson::value(r);
}

bool identical_number(const bson::value& a, const bson::value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is<double>()) {
    const double x = a.as<double>();
    const double y = b.as<double>();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  if (is_integral(a)) return as_int64(a) == as_int64(b);
  return a == b;
}

std::string number_debug_string(const bson::value& v) {
  if (v.is<std::int32_t>()) return "(NumberInt)" + std::to_string(v.as<std::int32_t>());
  if (v.is<std::int64_t>()) return "(NumberLong)" + std::to_string(v.as<std::int64_t>());
  if (v.is<double>()) return "(NumberDouble)" + double_text(v.as<double>());
  if (v.is<bson::decimal128>()) return "(NumberDecimal)" + v.as<bson::decimal128>().to_string();
  return "(EOO)";
}

// ---- number_sum ----
// The double-double technique: sum_ + addend_ represents the running total with about 107
// bits, so int64 values (each split into two exactly representable halves) sum exactly.

void number_sum::add_double(double x) {
  if (!std::isfinite(x)) {
    special_ = has_special_ ? special_ + x : x;
    has_special_ = true;
    return;
  }
  // Two-sum: s is the rounded sum and e exactly what the rounding lost.
  const double s = sum_ + x;
  const double b = s - sum_;
  const double e = (sum_ - (s - b)) + (x - b);
  const double t = addend_ + e;
  // Renormalize so sum_ stays the double nearest the total.
  sum_ = s + t;
  addend_ = t - (sum_ - s);
}

void number_sum::add(const bson::value& v) {
  if (v.is<bson::decimal128>()) {
    type_ = widest::decimal;
    decimal_ = from_dec(to_dec(decimal_) + to_dec(v.as<bson::decimal128>()));
    return;
  }
  if (v.is<double>()) {
    if (type_ != widest::decimal) type_ = widest::double_;
    add_double(v.as<double>());
    return;
  }
  if (v.is<std::int64_t>() && type_ == widest::int32) type_ = widest::int64;
  const std::int64_t x = as_int64(v);
  const std::int64_t high = x / (std::int64_t{1} << 32) * (std::int64_t{1} << 32);
  add_double(static_cast<double>(x - high));
  add_double(static_cast<double>(high));
}

bool number_sum::fits_int64() const {
  if (has_special_) return false;
  // 2^63 is exactly representable; a total is in range when sum_ + addend_ is below it and
  // at or above -2^63.
  constexpr double limit = 9223372036854775808.0;
  if (sum_ > -limit && sum_ < limit) return true;
  if (sum_ == limit) return addend_ < 0 && addend_ >= -limit;  // rounds back below 2^63
  if (sum_ == -limit) return addend_ >= 0;
  return false;
}

std::int64_t number_sum::to_int64() const {
  // Both parts are integers here (only integers were added); their exact sum fits int64.
  __extension__ using int128 = __int128;
  return static_cast<std::int64_t>(static_cast<int128>(sum_) + static_cast<int128>(addend_));
}

bson::decimal128 number_sum::total_decimal() const {
  dec total = to_dec(decimal_);
  if (has_special_) return from_dec(total + to_dec(to_decimal128(bson::value(special_), 34)));
  total += to_dec(to_decimal128(bson::value(sum_), 34));
  total += to_dec(to_decimal128(bson::value(addend_), 34));
  return from_dec(total);
}

bson::value number_sum::sum() const {
  switch (type_) {
    case widest::int32:
    case widest::int64:
      if (fits_int64()) {
        const std::int64_t r = to_int64();
        if (type_ == widest::int32 && r >= INT32_MIN && r <= INT32_MAX) {
          return bson::value(static_cast<std::int32_t>(r));
        }
        return bson::value(r);
      }
      [[fallthrough]];
    case widest::double_:
      return bson::value(has_special_ ? special_ : sum_);
    case widest::decimal:
      return bson::value(total_decimal());
  }
  return {};
}

bson::value number_sum::average(std::int64_t count) const {
  if (type_ == widest::decimal) {
    const dec n = to_dec(to_decimal128(bson::value(count)));
    return bson::value(from_dec(to_dec(total_decimal()) / n));
  }
  if (has_special_) return bson::value(special_ / static_cast<double>(count));
  return bson::value(sum_ / static_cast<double>(count));
}

}  // namespace mongo_emulator::engine
