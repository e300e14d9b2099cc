#include "bson/number_compare.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace denormd::bson {

namespace {

template <class T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

bool is_integral(const value& v) {
  return v.is<std::int32_t>() || v.is<std::int64_t>();
}

std::int64_t as_int64(const value& v) {
  return v.is<std::int32_t>() ? v.as<std::int32_t>() : v.as<std::int64_t>();
}

// Int64 against double without rounding the int64: doubles of magnitude 2^53 and above are
// whole numbers, and those of 2^63 and above are beyond every int64.
int compare_int_double(std::int64_t i, double d) {
  if (std::isnan(d)) return 1;
  constexpr std::int64_t exact_limit = std::int64_t{1} << 53;
  if (i >= -exact_limit && i <= exact_limit) return three_way(static_cast<double>(i), d);
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  return three_way(i, static_cast<std::int64_t>(d));
}

// A number's exact value: NaN < -Infinity < finite < +Infinity, a finite one as
// sign * digits * 10^exponent with neither leading nor trailing zeros in `digits` (empty for
// zero, whose sign is then 0).
struct exact_number {
  enum class category : std::uint8_t { nan, minus_infinity, finite, plus_infinity };
  category kind = category::finite;
  int sign = 0;
  std::string digits;
  long exponent = 0;
};

// Reads "[-]digits[.digits][(e|E)[+-]digits]", as libbson writes a decimal128 and printf's %e a
// double. The exponent is at most a few thousand (decimal128: -6176..6111, plus 34 digits).
exact_number parse_exact(std::string_view text) {
  exact_number n;
  const bool negative = !text.empty() && text.front() == '-';
  if (negative || (!text.empty() && text.front() == '+')) text.remove_prefix(1);
  const char first = text.empty() ? '0' : text.front();
  if (first == 'N' || first == 'n') {  // "NaN", "nan", "-nan": every NaN is one value
    n.kind = exact_number::category::nan;
    return n;
  }
  if (first == 'I' || first == 'i') {  // "Infinity", "inf"
    n.kind =
        negative ? exact_number::category::minus_infinity : exact_number::category::plus_infinity;
    return n;
  }
  long fraction_digits = 0;
  bool in_fraction = false;
  std::size_t i = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      in_fraction = true;
    } else if (c >= '0' && c <= '9') {
      if (!(n.digits.empty() && c == '0')) n.digits.push_back(c);
      if (in_fraction) ++fraction_digits;
    } else {
      break;
    }
  }
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative_exponent = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && exponent < 100000; ++i)
      exponent = exponent * 10 + (text[i] - '0');
    if (negative_exponent) exponent = -exponent;
  }
  n.exponent = exponent - fraction_digits;
  while (!n.digits.empty() && n.digits.back() == '0') {
    n.digits.pop_back();
    ++n.exponent;
  }
  n.sign = n.digits.empty() ? 0 : (negative ? -1 : 1);
  return n;
}

// A double's exact decimal digits, which glibc's printf writes when asked for enough of them:
// m * 2^-k (m odd, below 2^53) has at most 16 + ceil(k * log10(5)) significant digits when
// k > 0 (m * 5^k / 10^k), 16 + ceil(-k * log10(2)) otherwise, and never more than 767. %e
// writes one more than its precision.
exact_number exact_of_double(double d) {
  int precision = 0;
  if (std::isfinite(d) && d != 0) {
    int exponent = 0;
    const double fraction = std::frexp(std::fabs(d), &exponent);  // |d| = fraction * 2^exponent
    const auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
    const int k = 53 - exponent - std::countr_zero(mantissa);
    const int digits = k > 0 ? 16 + (k * 69898 + 99999) / 100000    // log10(5) < 0.69898
                             : 16 + (-k * 30103 + 99999) / 100000;  // log10(2) < 0.30103
    precision = std::min(digits, 767);
  }
  char text[800];
  std::snprintf(text, sizeof text, "%.*e", precision, d);
  return parse_exact(text);
}

exact_number exact_of(const value& v) {
  if (v.is<decimal128>()) return parse_exact(v.as<decimal128>().to_string());
  if (is_integral(v)) return parse_exact(std::to_string(as_int64(v)));
  return exact_of_double(v.as<double>());
}

int compare_exact(const exact_number& a, const exact_number& b) {
  if (int c = three_way(a.kind, b.kind)) return c;
  if (a.kind != exact_number::category::finite) return 0;
  if (int c = three_way(a.sign, b.sign)) return c;
  if (a.sign == 0) return 0;
  // Same sign: compare magnitudes by the position of the leading digit, then digit by digit
  // (without trailing zeros, the longer of two equal prefixes is the larger).
  const long a_top = a.exponent + static_cast<long>(a.digits.size());
  const long b_top = b.exponent + static_cast<long>(b.digits.size());
  int magnitude = three_way(a_top, b_top);
  if (magnitude == 0) {
    const int c = a.digits.compare(b.digits);
    magnitude = c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return a.sign * magnitude;
}

// A decimal against a double: the decimal's nearest double orders them unless it is that very
// double (rounding is monotonic), and only then do the exact digits decide.
int compare_decimal_double(const decimal128& x, double y) {
  const double nearest = x.to_double();
  if (std::isnan(nearest) || std::isnan(y)) {
    return std::isnan(nearest) ? (std::isnan(y) ? 0 : -1) : 1;
  }
  if (nearest != y) return nearest < y ? -1 : 1;
  return compare_exact(parse_exact(x.to_string()), exact_of_double(y));
}

}  // namespace

int compare_numbers(const value& a, const value& b) {
  if (a.is<decimal128>() && b.is<double>())
    return compare_decimal_double(a.as<decimal128>(), b.as<double>());
  if (a.is<double>() && b.is<decimal128>())
    return -compare_decimal_double(b.as<decimal128>(), a.as<double>());
  if (a.is<decimal128>() || b.is<decimal128>()) return compare_exact(exact_of(a), exact_of(b));
  if (is_integral(a) && is_integral(b)) return three_way(as_int64(a), as_int64(b));
  if (is_integral(a)) return compare_int_double(as_int64(a), b.as<double>());
  if (is_integral(b)) return -compare_int_double(as_int64(b), a.as<double>());
  const double x = a.as<double>();
  const double y = b.as<double>();
  // MongoDB sorts NaN below every other number and equal to itself.
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) ? (std::isnan(y) ? 0 : -1) : 1;
  return three_way(x, y);
}

}  // namespace denormd::bson
