#include "mapping/write_op.h"

#include <algorithm>

#include "bson/json.h"
#include "common/overloaded.h"
#include "mapping/kind_contract.h"
#include "mapping/reference.h"

namespace denormd::mapping {

const bson::document* write_op::selector() const {
  return std::visit(
      overloaded{[](const update_write& w) { return &w.filter; },
                 [](const refill_write& w) { return &w.parents; },
                 [](const recompute_write& w) { return &w.parents; },
                 [](const fill_write& w) { return &w.filter; },
                 [](const dead_letter_write&) -> const bson::document* { return nullptr; }},
      what);
}

std::string_view write_op::name() const {
  return std::visit(
      overloaded{[](const update_write& w) { return w.many ? "updateMany" : "updateOne"; },
                 [](const refill_write&) { return "refill"; },
                 [](const recompute_write&) { return "recompute"; },
                 [](const fill_write&) { return "fill"; },
                 [](const dead_letter_write&) { return "deadLetter"; }},
      what);
}

write_op dead_letter_op(const mapping& m, std::string reason, dead_letter_subject subject) {
  write_op op;
  op.source_mapping = &m;
  op.target = m.target;
  op.what = dead_letter_write{std::move(reason), std::move(subject)};
  return op;
}

bool refused(const mapping& m, const reference_site& at, const bson::value& v,
             std::vector<write_op>& out) {
  auto problem = reference_problem(v);
  if (!problem) return false;
  out.push_back(
      dead_letter_op(m, reference_reason(at, v, *problem),
                     dead_letter_subject{std::string(at.ns), at.id != nullptr ? *at.id : v,
                                         std::string(at.field)}));
  return true;
}

void set_path(bson::document& doc, std::string_view dotted, bson::value v) {
  const auto dot = dotted.find('.');
  if (dot == std::string_view::npos) {
    doc.set(dotted, std::move(v));
    return;
  }
  bson::value* child = doc.get(dotted.substr(0, dot));
  if (child == nullptr || !child->is_document()) {
    child = &doc.set(dotted.substr(0, dot), bson::document{});
  }
  set_path(child->as_document(), dotted.substr(dot + 1), std::move(v));
}

bson::document with_filter(bson::document match, const bson::document& filter) {
  const bool clash = std::any_of(filter.begin(), filter.end(),
                                 [&](const bson::field& f) { return match.contains(f.name); });
  if (clash) return bson::document{{"$and", bson::array{std::move(match), filter}}};
  for (const auto& f : filter)
    match.append(f.name, f.val);
  return match;
}

bson::document children_filter(const refill_query& r, const bson::value& key) {
  return with_filter(bson::document{{r.parent_key, key_match(r.parent_key, key)}}, r.filter);
}

bson::document fill_filter(const fill_query& f) {
  return bson::document{{f.key_field, key_match(f.key_field, f.key)}};
}

std::string to_plan_json(const write_op& op) {
  bson::document out;
  out.append("mapping", op.source_mapping != nullptr ? op.source_mapping->name : "");
  out.append("ns", op.target.full());
  out.append("op", std::string(op.name()));
  std::visit(overloaded{[&](const update_write& w) {
                          out.append("filter", w.filter);
                          if (w.pipeline.empty()) {
                            out.append("update", w.update);
                          } else {
                            out.append("update", w.pipeline);
                          }
                          if (!w.array_filters.empty()) out.append("arrayFilters", w.array_filters);
                          out.append("upsert", w.upsert);
                        },
                        [&](const refill_write& w) {
                          const auto& r = w.children;
                          out.append("filter", w.parents);
                          out.append("source", bson::document{{"ns", r.source.full()},
                                                              {"filter", r.filter},
                                                              {"parentKey", r.parent_key},
                                                              {"parentField", r.parent_field},
                                                              {"sort", r.sort},
                                                              {"limit", r.limit}});
                          out.append("into", op.source_mapping != nullptr ? op.source_mapping->into
                                                                          : std::string());
                        },
                        [&](const recompute_write& w) {
                          out.append("filter", w.parents);
                          if (op.source_mapping != nullptr) {
                            const mapping& m = *op.source_mapping;
                            m.visit([&](const auto& k) { k.explain(m, op, out); });
                          }
                          out.append("into", op.source_mapping != nullptr ? op.source_mapping->into
                                                                          : std::string());
                        },
                        [&](const fill_write& w) {
                          out.append("filter", w.filter);
                          out.append("source", bson::document{{"ns", w.source.source.full()},
                                                              {"filter", fill_filter(w.source)}});
                          if (!w.array_filters.empty()) out.append("arrayFilters", w.array_filters);
                          if (w.unset_without_source) out.append("withoutSource", "$unset");
                        },
                        [&](const dead_letter_write& w) { out.append("reason", w.reason); }},
             op.what);
  return bson::to_json(out);
}

}  // namespace denormd::mapping
