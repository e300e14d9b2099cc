#include "object_id.h"

#include <bson/bson.h>

#include <cstring>

namespace denormd::test {

bson::oid new_object_id() {
  bson_oid_t raw;
  bson_oid_init(&raw, nullptr);  // the default context is thread-safe
  bson::oid out;
  static_assert(sizeof(out.bytes) == sizeof(raw.bytes));
  std::memcpy(out.bytes.data(), raw.bytes, sizeof(raw.bytes));
  return out;
}

}  // namespace denormd::test
