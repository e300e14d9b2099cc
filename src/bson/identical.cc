#include "bson/identical.h"

#include <algorithm>
#include <cmath>

namespace denormd::bson {

bool identical(const value& a, const value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is<double>()) {
    const double x = a.as<double>();
    const double y = b.as<double>();
    // 0.0 and -0.0 compare equal but are different values to store.
    return x == y ? std::signbit(x) == std::signbit(y) : std::isnan(x) && std::isnan(y);
  }
  if (a.is_document()) return identical(a.as_document(), b.as_document());
  if (a.is_array()) return identical(a.as_array(), b.as_array());
  return a == b;
}

bool identical(const document& a, const document& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const field& x, const field& y) {
    return x.name == y.name && identical(x.val, y.val);
  });
}

bool identical(const array& a, const array& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const value& x, const value& y) { return identical(x, y); });
}

}  // namespace denormd::bson
