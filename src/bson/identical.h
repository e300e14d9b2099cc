#pragma once
// Whether a write of one value over another would change nothing: strict structural equality
// (the same types throughout, field order included: 1 and 1.0 differ) in which a NaN equals a
// NaN, as its bytes do. value::operator== leaves NaN unequal to itself, so code that rewrites
// until what it wrote holds would never stop on one. MongoDB's own equality, which compares
// numbers by value across types, is compare(a, b) == 0 (value.h). Pure.

#include "bson/value.h"

namespace denormd::bson {

bool identical(const value& a, const value& b);
bool identical(const document& a, const document& b);
bool identical(const array& a, const array& b);

}  // namespace denormd::bson
