#pragma once
// MongoDB's SafeNum arithmetic for $inc, $mul and $bit: int32 widens to int64 on overflow,
// int64 overflow is an error, a double operand makes a double, a decimal128 operand makes a
// decimal128 (a double operand is first rounded to 15 significant digits, as SafeNum does).
// Also the sum $sum and $avg keep. Stateless, except number_sum (one per accumulation).

#include <cstdint>
#include <optional>
#include <string>

#include "bson/value.h"

namespace mongo_emulator::engine {

enum class arithmetic_op { add, multiply };
enum class bitwise_op { and_, or_, xor_ };

// nullopt when the result is not representable (int64 overflow).
std::optional<denormd::bson::value> arithmetic(arithmetic_op op, const denormd::bson::value& a,
                                               const denormd::bson::value& b);
// Operands must be int32 or int64.
denormd::bson::value bitwise(bitwise_op op, const denormd::bson::value& a,
                             const denormd::bson::value& b);

// Same BSON type and same value (SafeNum::isIdentical): 1 and 1.0 differ, NaN equals NaN.
bool identical_number(const denormd::bson::value& a, const denormd::bson::value& b);

// "(NumberInt)1", "(NumberLong)2", "(NumberDouble)1.5": SafeNum::debugString.
std::string number_debug_string(const denormd::bson::value& v);

// A number as decimal128: integers exactly; a double quantized to 15 significant digits
// (trailing zeros kept: 0.1 is 0.100000000000000, as SafeNum converts), or with digits = 34
// the nearest 34-digit value without superfluous zeros (as $sum/$avg widen their double part).
denormd::bson::decimal128 to_decimal128(const denormd::bson::value& v, int digits = 15);

// Decimal128 arithmetic (IEEE 754-2008, round half to even), for the aggregation operators
// ($add, $subtract, $multiply, $divide) that leave SafeNum's rules.
enum class decimal_op { add, subtract, multiply, divide };
denormd::bson::decimal128 decimal_arithmetic(decimal_op op, const denormd::bson::decimal128& a,
                                             const denormd::bson::decimal128& b);
bool decimal_is_zero(const denormd::bson::decimal128& d);
// Rounded half to even, as Decimal128::toLong (saturating; NaN gives INT64_MIN, as MongoDB's).
std::int64_t decimal_to_int64(const denormd::bson::decimal128& d);

// Decimal128::quantize: `d` rounded to a multiple of 10^exponent (half to even, or toward zero),
// with that exponent; infinities unchanged; NaN when the result would need more than 34
// digits (IEEE's invalid operation), as for a huge value rounded to units.
enum class decimal_rounding { half_even, toward_zero };
denormd::bson::decimal128 decimal_quantize(const denormd::bson::decimal128& d, int exponent,
                                           decimal_rounding mode);
// Decimal128::modulo (the remainder of truncating division, the dividend's sign); exact when
// the aligned operands fit 38 digits, otherwise through doubles.
denormd::bson::decimal128 decimal_modulo(const denormd::bson::decimal128& a,
                                         const denormd::bson::decimal128& b);
// The nearest double (Decimal128::toDouble, ties to even).
double decimal_to_double(const denormd::bson::decimal128& d);
bool decimal_is_nan(const denormd::bson::decimal128& d);
bool decimal_is_infinite(const denormd::bson::decimal128& d);
// Decimal128::toString (libbson's form: the IEEE to-scientific-string rules MongoDB's follows).
std::string decimal_text(const denormd::bson::decimal128& d);
// Parses a decimal string as Decimal128's constructor does; nullopt when it is not one.
std::optional<denormd::bson::decimal128> parse_decimal128(const std::string& text);

// The sum of $group's $sum and $avg, as MongoDB's accumulators keep it: integers and doubles
// in a compensated double-double sum (exact for any run of int32/int64 values), decimals in a
// decimal128 sum, and the widest type seen. Non-numbers are the caller's to skip.
class number_sum {
 public:
  void add(const denormd::bson::value& v);
  // $sum's result: int32 while it fits (only int32 seen), then int64, then double; a
  // decimal128 if any decimal was added.
  denormd::bson::value sum() const;
  // $avg's result for `count` numbers (count > 0): a double, or a decimal128 if any decimal
  // was added.
  denormd::bson::value average(std::int64_t count) const;

 private:
  void add_double(double x);
  bool fits_int64() const;
  std::int64_t to_int64() const;
  denormd::bson::decimal128 total_decimal() const;

  enum class widest { int32, int64, double_, decimal } type_ = widest::int32;
  double sum_ = 0;      // the double nearest the non-decimal sum
  double addend_ = 0;   // what sum_ misses of it
  double special_ = 0;  // the sum of the non-finite values added (NaN/inf), if any
  bool has_special_ = false;
  denormd::bson::decimal128 decimal_{0, 0x3040000000000000ULL};  // 0E+0
};

}  // namespace mongo_emulator::engine
