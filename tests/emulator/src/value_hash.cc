#include "value_hash.h"

#include <cmath>
#include <functional>
#include <string_view>

namespace mongo_emulator {

namespace bson = denormd::bson;

namespace {

std::size_t combine(std::size_t seed, std::size_t h) {
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

std::size_t bytes_hash(const void* p, std::size_t n) {
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(p), n));
}

}  // namespace

std::size_t value_hash::operator()(const bson::value& v) const {
  // Values of one canonical rank may compare equal across types (numbers), so the rank and a
  // type-independent form of the value are what get hashed.
  std::size_t h = static_cast<std::size_t>(bson::canonical_rank(v));
  switch (v.kind()) {
    case bson::type::int32:
    case bson::type::int64:
    case bson::type::double_:
    case bson::type::decimal128: {
      const double d = v.to_double();
      if (std::isnan(d)) return combine(h, 1);
      return combine(h, std::hash<double>{}(d == 0 ? 0.0 : d));
    }
    case bson::type::string:
      return combine(h, std::hash<std::string>{}(v.as_string()));
    case bson::type::symbol:
      return combine(h, std::hash<std::string>{}(v.as<bson::symbol>().text));
    case bson::type::oid: {
      const auto& b = v.as<bson::oid>().bytes;
      return combine(h, bytes_hash(b.data(), b.size()));
    }
    case bson::type::boolean:
      return combine(h, v.as<bool>() ? 1 : 2);
    case bson::type::date:
      return combine(h, std::hash<std::int64_t>{}(v.as<bson::date_time>().millis));
    case bson::type::timestamp: {
      const auto& ts = v.as<bson::timestamp>();
      return combine(h, (std::size_t{ts.t} << 32) | ts.i);
    }
    case bson::type::binary: {
      const auto& b = v.as<bson::binary>();
      return combine(combine(h, b.subtype), bytes_hash(b.data.data(), b.data.size()));
    }
    case bson::type::document:
      for (const auto& f : v.as_document())
        h = combine(combine(h, std::hash<std::string>{}(f.name)), (*this)(f.val));
      return h;
    case bson::type::array:
      for (const auto& e : v.as_array())
        h = combine(h, (*this)(e));
      return h;
    default:
      return h;  // the remaining types are rare as keys; equality sorts them out
  }
}

}  // namespace mongo_emulator
