#include "mapping/computed_fields.h"

#include <algorithm>

#include "bson/json.h"
#include "mapping/computed_expression.h"
#include "mapping/mapping.h"

namespace denormd::mapping {

computed_fields::computed_fields(std::span<const mapping* const> mappings) {
  for (const mapping* m : mappings) {
    for (const auto& f : m->fields) {
      if (!f.computed) continue;
      const auto& e = *f.computed;
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [&](const entry& x) { return x.expression->key() == e.key(); });
      if (it == entries_.end()) it = entries_.insert(entries_.end(), entry{&e, {}});
      it->owners.push_back({m, f.name});
      whole_ = whole_ || e.reads_whole_document();
      for (const auto& p : e.reads()) {
        std::string top = p.substr(0, p.find('.'));
        if (std::find(top_fields_.begin(), top_fields_.end(), top) == top_fields_.end())
          top_fields_.push_back(std::move(top));
      }
    }
  }
}

const computed_fields::entry* computed_fields::find(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.expression->key() == key) return &e;
  }
  return nullptr;
}

bson::document computed_fields::projection() const {
  bson::document out{{"_id", 0}};
  for (const auto& e : entries_)
    out.append(e.expression->key(), e.expression->as_bson());
  return out;
}

bson::document computed_fields::projection(std::span<const std::string> keys) const {
  bson::document out{{"_id", 0}};
  for (const auto& k : keys) {
    if (const entry* e = find(k)) out.append(k, e->expression->as_bson());
  }
  return out;
}

bson::document computed_fields::input(const bson::document& doc) const {
  if (whole_) {
    bson::document out = doc;
    out.erase(computed_root);
    return out;
  }
  bson::document out;
  if (const bson::value* id = doc.get("_id")) out.append("_id", *id);
  for (const auto& name : top_fields_) {
    if (name == "_id") continue;
    if (const bson::value* v = doc.get(name)) out.append(name, *v);
  }
  return out;
}

bson::document computed_fields::same_input(const bson::document& input) const {
  const bson::document literal{{"$literal", input}};
  if (whole_) return bson::document{{"$eq", bson::array{"$$ROOT", literal}}};
  // An object expression leaves out a missing field, as input() does: same fields, same order.
  bson::document now{{"_id", "$_id"}};
  for (const auto& name : top_fields_) {
    if (name != "_id") now.append(name, "$" + name);
  }
  return bson::document{{"$eq", bson::array{std::move(now), literal}}};
}

void computed_fields::put(bson::document& doc, bson::document values) {
  doc.set(computed_root, std::move(values));
}

std::string computed_fields::failure_reason(const std::string& field, const bson::value& doc_id,
                                            const computed_failure& failure) {
  return "computed field \"" + field + "\" could not be computed for the source document " +
         bson::to_json(doc_id) + (failure.before ? " (its state before the change)" : "") +
         ": the server said: " + failure.error + "; the field is written as absent";
}

}  // namespace denormd::mapping
