#include "numeric.h"

#include <cmath>
#include <cstdint>

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

}  // namespace

std::optional<bson::value> arithmetic(arithmetic_op op, const bson::value& a,
                                      const bson::value& b) {
  if (a.is<bson::decimal128>() || b.is<bson::decimal128>()) return std::nullopt;
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

}  // namespace mongo_emulator::engine
