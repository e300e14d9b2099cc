#include "engine_adapter.h"

#include "error_codes.h"
#include "object_id.h"
#include "pipeline.h"
#include "projection.h"
#include "query_operators.h"
#include "sort_spec.h"
#include "update.h"

namespace mongo_emulator {

struct prepared_update::impl {
  engine::update_spec spec;
};

denormd::expected<prepared_update> prepared_update::parse(const bson::document& update,
                                                          const bson::array* array_filters) {
  std::vector<bson::document> filters;
  if (array_filters != nullptr) {
    for (const auto& f : *array_filters) {
      if (!f.is_document())
        return denormd::fail("BSON field 'arrayFilters' contains an element that is not an object",
                             codes::type_mismatch);
      filters.push_back(f.as_document());
    }
  }
  auto spec = engine::parse_update(update, filters);
  if (!spec) return spec.error();
  prepared_update p;
  p.impl_ = std::make_shared<const impl>(impl{std::move(spec).value()});
  return p;
}

denormd::expected<prepared_update> prepared_update::parse_pipeline(const bson::array& stages,
                                                                   const bson::document* let) {
  auto spec = engine::parse_pipeline_update(stages, let);
  if (!spec) return spec.error();
  prepared_update p;
  p.impl_ = std::make_shared<const impl>(impl{std::move(spec).value()});
  return p;
}

bool prepared_update::is_replacement() const {
  return impl_->spec.is_replacement();
}

denormd::expected<prepared_update::result> prepared_update::apply(
    const bson::document& doc, const denormd::query::matcher& query) const {
  result r;
  engine::update_context ctx;
  if (impl_->spec.uses_positional()) ctx.positional = engine::positional_index(query, doc);
  auto description = engine::apply_update(impl_->spec, doc, r.doc, ctx);
  if (!description) return description.error();
  r.changed = !description->empty();
  r.replaced = description->replaced;
  if (r.changed && !r.replaced) r.update_description = std::move(*description).to_document();
  return r;
}

denormd::expected<bson::document> prepared_update::upsert(
    const denormd::query::matcher& query) const {
  return engine::make_upsert_document(impl_->spec, query,
                                      bson::value(denormd::test::new_object_id()));
}

denormd::expected<projection_fn> compile_projection(const bson::document& spec,
                                                    const bson::document* let) {
  if (spec.empty()) return projection_fn{};
  auto p = engine::projection::parse(spec, engine::projection::flavour::find, let);
  if (!p) return p.error();
  return projection_fn(
      [p = std::move(p).value()](const bson::document& doc) { return engine::apply(p, doc); });
}

denormd::expected<sort_less> compile_sort(const bson::document& spec) {
  auto s = engine::parse_sort(spec);
  if (!s) return s.error();
  if (s->empty()) return sort_less{};
  return sort_less(std::move(s).value());
}

denormd::expected<event_transform> compile_event_stage(const std::string& name,
                                                       const bson::value& spec,
                                                       const bson::document* let) {
  auto stage = engine::pipeline_stage::parse(bson::value(bson::document{{name, spec}}), let);
  if (!stage) return stage.error();
  if (!stage->is_streaming())
    return denormd::fail(name + " is not permitted in a $changeStream pipeline",
                         codes::illegal_operation);
  return event_transform([stage = std::move(stage).value()](bson::document event) {
    return stage.transform(std::move(event));
  });
}

denormd::expected<std::vector<bson::document>> run_pipeline(const bson::array& stages,
                                                            const std::vector<doc_ptr>& input,
                                                            const bson::document* let) {
  auto parsed = engine::parse_pipeline(stages, let);
  if (!parsed) return parsed.error();
  std::vector<bson::document> docs;
  docs.reserve(input.size());
  for (const auto& d : input)
    docs.push_back(*d);
  return engine::run_pipeline(*parsed, std::move(docs));
}

denormd::expected<std::vector<bson::document>> run_documents_pipeline(const bson::array& stages,
                                                                      const bson::document* let) {
  auto docs = engine::documents_stage(stages.front().as_document().fields().front().val, let);
  if (!docs) return docs.error();
  auto parsed = engine::parse_pipeline(bson::array(stages.begin() + 1, stages.end()), let);
  if (!parsed) return parsed.error();
  return engine::run_pipeline(*parsed, std::move(docs).value());
}

}  // namespace mongo_emulator
