#include "mapping/write_op.h"

#include "bson/json.h"

namespace denormd::mapping {

std::string_view kind_name(write_kind k) {
  switch (k) {
    case write_kind::update_one:
      return "updateOne";
    case write_kind::update_many:
      return "updateMany";
    case write_kind::refill:
      return "refill";
    case write_kind::fill:
      return "fill";
  }
  return "?";
}

bson::document children_filter(const refill_query& r, const bson::value& key) {
  bson::document f{{r.parent_key, key}};
  if (r.filter.empty()) return f;
  if (r.filter.contains(r.parent_key)) return bson::document{{"$and", bson::array{f, r.filter}}};
  for (const auto& field : r.filter)
    f.append(field.name, field.val);
  return f;
}

std::string to_plan_json(const write_op& op) {
  bson::document out;
  out.append("mapping", op.source_mapping != nullptr ? op.source_mapping->name : "");
  out.append("ns", op.target.full());
  out.append("op", std::string(kind_name(op.kind)));
  out.append("filter", op.filter);
  if (op.kind == write_kind::refill && op.refill) {
    const auto& r = *op.refill;
    out.append("source", bson::document{{"ns", r.source.full()},
                                        {"filter", r.filter},
                                        {"parentKey", r.parent_key},
                                        {"parentField", r.parent_field},
                                        {"sort", r.sort},
                                        {"limit", r.limit}});
    out.append("into", op.source_mapping != nullptr ? op.source_mapping->into : "");
  } else if (op.kind == write_kind::fill && op.fill) {
    out.append("source",
               bson::document{{"ns", op.fill->source.full()},
                              {"filter", bson::document{{op.fill->key_field, op.fill->key}}}});
    if (!op.array_filters.empty()) out.append("arrayFilters", op.array_filters);
  } else {
    out.append("update", op.update);
    if (!op.array_filters.empty()) out.append("arrayFilters", op.array_filters);
    out.append("upsert", op.upsert);
  }
  return bson::to_json(out);
}

}  // namespace denormd::mapping
