#include "bson_size.h"

#include <string>

namespace mongo_emulator {

namespace bson = denormd::bson;

namespace {

std::size_t digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

}  // namespace

std::size_t bson_size(const bson::document& d) {
  std::size_t n = 5;  // length prefix and terminator
  for (const auto& f : d)
    n += 1 + f.name.size() + 1 + bson_size(f.val);
  return n;
}

std::size_t bson_size(const bson::value& v) {
  switch (v.kind()) {
    case bson::type::double_:
    case bson::type::date:
    case bson::type::timestamp:
    case bson::type::int64:
      return 8;
    case bson::type::int32:
      return 4;
    case bson::type::boolean:
      return 1;
    case bson::type::oid:
      return 12;
    case bson::type::decimal128:
      return 16;
    case bson::type::null:
    case bson::type::undefined:
    case bson::type::min_key:
    case bson::type::max_key:
      return 0;
    case bson::type::string:
      return 4 + v.as_string().size() + 1;
    case bson::type::code:
      return 4 + v.as<bson::code>().text.size() + 1;
    case bson::type::symbol:
      return 4 + v.as<bson::symbol>().text.size() + 1;
    case bson::type::binary:
      return 4 + 1 + v.as<bson::binary>().data.size();
    case bson::type::regex: {
      const auto& r = v.as<bson::regex>();
      return r.pattern.size() + 1 + r.options.size() + 1;
    }
    case bson::type::document:
      return bson_size(v.as_document());
    case bson::type::array: {
      std::size_t n = 5;
      const auto& a = v.as_array();
      for (std::size_t i = 0; i < a.size(); ++i)
        n += 1 + digits(i) + 1 + bson_size(a[i]);
      return n;
    }
  }
  return 0;
}

}  // namespace mongo_emulator
