#pragma once
// MongoDB's order of numbers across int32, int64, double and decimal128: by exact value, so
// NumberDecimal("0.1") is below the double 0.1 (0.1000000000000000055511151231257827...) and
// NumberDecimal("4.00000000000000000001") is above 4. NaN of either type equals NaN and sorts
// below every other number, -Infinity next; -0 equals 0; 1.0 equals 1.00. Pure functions.

#include "bson/value.h"

namespace denormd::bson {

// Three-way comparison of two numbers (value::is_number() for both): -1, 0 or 1.
int compare_numbers(const value& a, const value& b);

}  // namespace denormd::bson
