#include "collection_stats.h"

#include <chrono>
#include <limits>

#include "bson_size.h"
#include "error_codes.h"
#include "query/matcher.h"
#include "server_state.h"

namespace mongo_emulator {

namespace {

using denormd::fail;

// BSONObjBuilder::appendNumber(long long): an int32 when it fits.
bson::value number(std::int64_t n) {
  if (n >= std::numeric_limits<std::int32_t>::min() &&
      n <= std::numeric_limits<std::int32_t>::max())
    return bson::value(static_cast<std::int32_t>(n));
  return bson::value(n);
}

// A stored collection's fields, in appendCollectionStorageStats' order (the record store's
// `capped` among them); nullopt when it does not exist. Under the read lock.
std::optional<bson::document> stored_stats(const collection* c, std::int64_t scale) {
  if (c == nullptr) return std::nullopt;
  std::int64_t size = 0;
  for (auto record : c->candidates(denormd::query::matcher())) {
    if (const auto& doc = c->get(record)) size += static_cast<std::int64_t>(bson_size(*doc));
  }
  const auto count = static_cast<std::int64_t>(c->size());
  const auto specs = c->index_specs();
  const std::int64_t per_index = count * index_bytes_per_document;
  bson::document s;
  s.append("size", number(size / scale));
  s.append("count", number(count));
  if (count > 0) s.append("avgObjSize", static_cast<std::int32_t>(size / count));
  s.append("numOrphanDocs", std::int32_t{0});
  s.append("storageSize", number(size / scale));
  s.append("freeStorageSize", std::int32_t{0});
  s.append("capped", false);
  s.append("nindexes", static_cast<std::int32_t>(specs.size()));
  s.append("indexDetails", bson::document{});
  s.append("indexBuilds", bson::array{});
  const auto total_index = per_index * static_cast<std::int64_t>(specs.size());
  s.append("totalIndexSize", number(total_index / scale));
  s.append("totalSize", number((size + total_index) / scale));
  bson::document index_sizes;
  for (const auto& spec : specs)
    index_sizes.append(spec.name, number(per_index / scale));
  s.append("indexSizes", std::move(index_sizes));
  s.append("scaleFactor", number(scale));
  return s;
}

std::optional<bson::document> storage_fields(server_state& server, const std::string& db,
                                             const std::string& coll, std::int64_t scale) {
  auto lock = server.store().lock_for_read();
  if (db == "local") {
    if (auto s = server.local().storage_stats(server, coll, scale)) return s;
  }
  return stored_stats(server.store().find(db, coll), scale);
}

// StorageStatsSpec (6.0's document_source_coll_stats.idl): scale (>= 1), verbose, waitForLock,
// numericOnly.
denormd::expected<std::int64_t> stage_scale(const bson::value& spec) {
  if (!spec.is_document())
    return fail("BSON field '$collStats.storageStats' is the wrong type '" +
                    std::string(bson::type_name(spec.kind())) + "', expected type 'object'",
                codes::type_mismatch);
  std::int64_t scale = 1;
  for (const auto& f : spec.as_document()) {
    const std::string field = "$collStats.storageStats." + f.name;
    if (f.name == "scale") {
      if (!f.val.is_number())
        return fail("BSON field '" + field + "' is the wrong type '" +
                        std::string(bson::type_name(f.val.kind())) +
                        "', expected types '[long, int, decimal, double]'",
                    codes::type_mismatch);
      scale = static_cast<std::int64_t>(f.val.to_double());
      if (scale < 1)
        return fail(
            "BSON field 'scale' value must be >= 1, actual value '" + std::to_string(scale) + "'",
            51024);
    } else if (f.name == "verbose" || f.name == "waitForLock" || f.name == "numericOnly") {
      if (!f.val.is<bool>())
        return fail("BSON field '" + field + "' is the wrong type '" +
                        std::string(bson::type_name(f.val.kind())) + "', expected type 'bool'",
                    codes::type_mismatch);
    } else {
      return fail("BSON field '" + field + "' is an unknown field.", codes::idl_unknown_field);
    }
  }
  return scale;
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

denormd::expected<bson::document> coll_stats(server_state& server, const std::string& db,
                                             const std::string& coll, const bson::document& body) {
  std::int64_t scale = 1;
  if (const auto* s = body.get("scale")) {
    if (s->is_number()) {
      scale = static_cast<std::int64_t>(s->to_double());
      if (scale < 1) return fail("scale has to be >= 1", codes::bad_value);
    } else if (!s->is_null() && !(s->is<bool>() && !s->as<bool>())) {
      return fail("scale has to be a number >= 1", codes::bad_value);
    }
  }
  bson::document out;
  out.append("ns", db + "." + coll);
  if (auto fields = storage_fields(server, db, coll, scale)) {
    for (auto& f : *fields)
      out.append(std::move(f.name), std::move(f.val));
    return out;
  }
  // appendCollectionStorageStats' zeros for a missing collection (NamespaceNotFound, which
  // collStats does not report).
  out.append("size", std::int32_t{0});
  out.append("count", std::int32_t{0});
  out.append("storageSize", std::int32_t{0});
  out.append("totalSize", std::int32_t{0});
  out.append("nindexes", std::int32_t{0});
  out.append("totalIndexSize", std::int32_t{0});
  out.append("indexDetails", bson::document{});
  out.append("indexSizes", bson::document{});
  out.append("scaleFactor", number(scale));
  return out;
}

denormd::expected<bson::document> coll_stats_stage(server_state& server, const std::string& db,
                                                   const std::string& coll,
                                                   const bson::value& spec) {
  if (!spec.is_document())
    return fail("$collStats must take a nested object but found: $collStats: " +
                    std::string(bson::type_name(spec.kind())),
                5447000);
  const bson::value* storage = nullptr;
  bool count = false;
  for (const auto& f : spec.as_document()) {
    if (f.name == "storageStats") {
      storage = &f.val;
    } else if (f.name == "count") {
      if (!f.val.is_document())
        return fail("BSON field '$collStats.count' is the wrong type '" +
                        std::string(bson::type_name(f.val.kind())) + "', expected type 'object'",
                    codes::type_mismatch);
      count = true;
    } else if (f.name == "latencyStats" || f.name == "queryExecStats") {
      return fail("mongo-emulator does not implement $collStats." + f.name +
                      " (see tests/emulator/README.md)",
                  codes::not_implemented);
    } else {
      return fail("BSON field '$collStats." + f.name + "' is an unknown field.",
                  codes::idl_unknown_field);
    }
  }
  std::int64_t scale = 1;
  if (storage != nullptr) {
    auto s = stage_scale(*storage);
    if (!s) return s.error();
    scale = *s;
  }
  bson::document out;
  out.append("ns", db + "." + coll);
  out.append("host", server.address());
  out.append("localTime", bson::date_time{now_ms()});
  if (storage == nullptr && !count) return out;
  auto fields = storage_fields(server, db, coll, scale);
  if (!fields) {
    return fail(std::string("Unable to retrieve ") + (storage ? "storageStats" : "count") +
                    " in $collStats stage :: caused by :: Collection [" + db + "." + coll +
                    "] not found.",
                codes::namespace_not_found);
  }
  if (storage != nullptr) out.append("storageStats", *fields);
  if (count) out.append("count", *fields->get("count"));
  return out;
}

}  // namespace mongo_emulator
