#pragma once
// MongoDB's SafeNum arithmetic for $inc, $mul and $bit: int32 widens to int64 on overflow,
// int64 overflow is an error, a double operand makes a double. decimal128 arithmetic is not
// implemented (see the report in the engine's README section of update.h). Stateless.

#include <optional>
#include <string>

#include "bson/value.h"

namespace mongo_emulator::engine {

enum class arithmetic_op { add, multiply };
enum class bitwise_op { and_, or_, xor_ };

// nullopt when the result is not representable (int64 overflow) or an operand is decimal128.
std::optional<denormd::bson::value> arithmetic(arithmetic_op op, const denormd::bson::value& a,
                                               const denormd::bson::value& b);
// Operands must be int32 or int64.
denormd::bson::value bitwise(bitwise_op op, const denormd::bson::value& a,
                             const denormd::bson::value& b);

// Same BSON type and same value (SafeNum::isIdentical): 1 and 1.0 differ, NaN equals NaN.
bool identical_number(const denormd::bson::value& a, const denormd::bson::value& b);

// "(NumberInt)1", "(NumberLong)2", "(NumberDouble)1.5": SafeNum::debugString.
std::string number_debug_string(const denormd::bson::value& v);

}  // namespace mongo_emulator::engine
