#include "bson/value_hash.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace denormd::bson {

namespace {

std::size_t combine(std::size_t seed, std::size_t h) {
  // boost::hash_combine's mixing step.
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

std::size_t bytes_hash(const void* p, std::size_t n) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(p), n));
}

}  // namespace

std::size_t value_hash::operator()(const value& v) const {
  // Values of one canonical rank may compare equal across types (numbers), so the rank and a
  // type-independent form of the value are what get hashed. Numbers that differ only past
  // double precision (decimals, large int64s) share a hash; equality tells them apart.
  std::size_t h = static_cast<std::size_t>(canonical_rank(v)) + 2;
  switch (v.kind()) {
    case type::int32:
    case type::int64:
    case type::double_:
    case type::decimal128: {
      const double d = v.to_double();
      if (std::isnan(d)) return combine(h, 0x7ff8);
      return combine(h, std::hash<double>{}(d == 0 ? 0.0 : d));  // -0.0 equals 0
    }
    case type::string:
      return combine(h, std::hash<std::string_view>{}(v.as_string()));
    case type::symbol:
      return combine(h, std::hash<std::string_view>{}(v.as<symbol>().text));
    case type::oid: {
      const auto& b = v.as<oid>().bytes;
      return combine(h, bytes_hash(b.data(), b.size()));
    }
    case type::boolean:
      return combine(h, v.as<bool>() ? 1 : 2);
    case type::date:
      return combine(h, std::hash<std::int64_t>{}(v.as<date_time>().millis));
    case type::timestamp: {
      const auto& ts = v.as<timestamp>();
      return combine(h, (std::size_t{ts.t} << 32) | ts.i);
    }
    case type::binary: {
      const auto& b = v.as<binary>();
      return combine(combine(h, b.subtype), bytes_hash(b.data.data(), b.data.size()));
    }
    case type::document:
      for (const auto& f : v.as_document())
        h = combine(combine(h, std::hash<std::string_view>{}(f.name)), (*this)(f.val));
      return h;
    case type::array:
      for (const auto& e : v.as_array())
        h = combine(h, (*this)(e));
      return h;
    default:
      return h;  // the remaining types are rare as keys; equality tells them apart
  }
}

}  // namespace denormd::bson
