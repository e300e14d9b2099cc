#include "ops/commands/computed_reads.h"

#include "mapping/computed_expression.h"
#include "mapping/computed_fields.h"

namespace denormd::ops {

mongo::result<std::vector<sink::computed_evaluator::failure>> compute_fields(
    mongo::document_client& conn, const mapping::mapping& m, std::span<bson::document> docs) {
  if (!m.has_computed_fields() || docs.empty())
    return std::vector<sink::computed_evaluator::failure>{};
  const mapping::mapping* one = &m;
  const mapping::computed_fields fields(std::span<const mapping::mapping* const>(&one, 1));
  std::vector<bson::document*> each;
  each.reserve(docs.size());
  for (auto& d : docs)
    each.push_back(&d);
  sink::computed_evaluator evaluator(conn);
  return evaluator.evaluate(m.source.db, fields, each);
}

bool project_field_sources(bson::document& projection, const mapping::mapping& m) {
  auto add = [&](const std::string& path) {
    const std::string field = path.substr(0, path.find('.'));
    if (!field.empty() && !projection.contains(field)) projection.append(field, 1);
  };
  for (const auto& f : m.fields) {
    if (!f.computed) {
      add(f.source_path);
    } else if (f.computed->reads_whole_document()) {
      return false;
    } else {
      for (const auto& p : f.computed->reads())
        add(p);
    }
  }
  return true;
}

}  // namespace denormd::ops
