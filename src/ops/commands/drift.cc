#include "ops/commands/drift.h"

#include "mapping/reference.h"

namespace denormd::ops {

void narrow_to(mapping::write_op& op, const bson::value& id) {
  auto& w = std::get<mapping::update_write>(op.what);
  if (w.filter.contains("_id")) {
    w.filter = bson::document{
        {"$and", bson::array{bson::document{{"_id", mapping::literal(id)}}, w.filter}}};
  } else {
    bson::document filter{{"_id", mapping::literal(id)}};
    for (auto& f : w.filter.fields())
      filter.append(std::move(f.name), std::move(f.val));
    w.filter = std::move(filter);
  }
  w.many = false;
}

}  // namespace denormd::ops
