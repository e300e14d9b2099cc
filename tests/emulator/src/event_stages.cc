#include "event_stages.h"

#include <algorithm>
#include <array>

#include "engine_adapter.h"
#include "error_codes.h"
#include "query/matcher.h"
#include "query_operators.h"

namespace mongo_emulator {

namespace {

using denormd::fail;

constexpr std::array<std::string_view, 7> allowed_shaping{
    "$project", "$addFields", "$set", "$replaceRoot", "$replaceWith", "$redact", "$unset"};

constexpr std::array<std::string_view, 26> known_forbidden{
    "$group",         "$sort",      "$limit",      "$skip",         "$lookup",
    "$unwind",        "$out",       "$merge",      "$facet",        "$count",
    "$sample",        "$bucket",    "$bucketAuto", "$geoNear",      "$graphLookup",
    "$sortByCount",   "$unionWith", "$densify",    "$fill",         "$setWindowFields",
    "$indexStats",    "$collStats", "$currentOp",  "$listSessions", "$documents",
    "$planCacheStats"};

template <class Array>
bool contains(const Array& a, std::string_view name) {
  return std::find(a.begin(), a.end(), name) != a.end();
}

}  // namespace

denormd::expected<event_stage> make_event_stage(const std::string& name, const bson::value& spec,
                                                const bson::document* let) {
  if (name == "$match") {
    if (!spec.is_document())
      return fail("the match filter must be an expression in an object", 15959);
    auto m = engine::compile_query(spec.as_document(), let);
    if (!m) return fail(m.error().message, m.error().code);
    return event_stage([m = std::move(m).value()](bson::document event)
                           -> denormd::expected<std::optional<bson::document>> {
      if (!m.matches(event)) return std::optional<bson::document>{};
      return std::optional<bson::document>(std::move(event));
    });
  }
  if (contains(allowed_shaping, name)) {
    auto t = compile_event_stage(name, spec, let);
    if (!t) return t.error();
    return event_stage(std::move(t).value());
  }
  if (contains(known_forbidden, name))
    return fail(name + " is not permitted in a $changeStream pipeline", codes::illegal_operation);
  return fail("Unrecognized pipeline stage name: '" + name + "'",
              codes::location_40324_unrecognized_stage);
}

}  // namespace mongo_emulator
