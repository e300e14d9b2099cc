// TEMPORARY: minimal stand-in until the engine's update.h/pipeline.h exist.
#include "engine_adapter.h"

#include "error_codes.h"

namespace mongo_emulator {

struct prepared_update::impl {
  bson::document update;
};

denormd::expected<prepared_update> prepared_update::parse(const bson::document& update,
                                                          const bson::array*) {
  prepared_update p;
  p.impl_ = std::make_shared<impl>(impl{update});
  return p;
}

bool prepared_update::is_replacement() const {
  return impl_->update.empty() || impl_->update.fields().front().name[0] != '$';
}

denormd::expected<prepared_update::result> prepared_update::apply(
    const bson::document& doc, const denormd::query::matcher&,
    const denormd::query::match_details&) const {
  result r;
  if (is_replacement()) {
    r.doc.append("_id", *doc.get("_id"));
    for (const auto& f : impl_->update) {
      if (f.name != "_id") r.doc.append(f.name, f.val);
    }
    r.replaced = true;
    r.changed = !(r.doc == doc);
    return r;
  }
  r.doc = doc;
  bson::document updated;
  for (const auto& op : impl_->update) {
    if (op.name != "$set") return denormd::fail("stub engine: only $set", codes::bad_value);
    for (const auto& f : op.val.as_document()) {
      const auto* old = r.doc.get(f.name);
      if (old != nullptr && *old == f.val) continue;
      r.doc.set(f.name, f.val);
      updated.append(f.name, f.val);
      r.changed = true;
    }
  }
  r.update_description.append("updatedFields", std::move(updated));
  r.update_description.append("removedFields", bson::array{});
  r.update_description.append("truncatedArrays", bson::array{});
  return r;
}

denormd::expected<bson::document> prepared_update::upsert(
    const denormd::query::matcher& query) const {
  bson::document seed;
  for (const auto& [path, v] : query.equalities())
    seed.set(path, v);
  denormd::query::match_details none;
  auto r = apply(seed.contains("_id") ? seed : seed, query, none);
  if (!r) return r.error();
  return r->doc;
}

denormd::expected<projection_fn> compile_projection(const bson::document&) {
  return projection_fn{};
}

denormd::expected<sort_less> compile_sort(const bson::document& spec) {
  return sort_less([spec](const bson::document& a, const bson::document& b) {
    for (const auto& f : spec) {
      const auto* x = a.find_path(f.name);
      const auto* y = b.find_path(f.name);
      const bson::value nx, ny;
      int c = bson::compare(x ? *x : nx, y ? *y : ny);
      if (c != 0) return f.val.to_double() < 0 ? c > 0 : c < 0;
    }
    return false;
  });
}

denormd::expected<event_transform> compile_event_stage(const std::string& name,
                                                       const bson::value&) {
  return denormd::fail("stub engine: " + name, codes::bad_value);
}

denormd::expected<std::vector<bson::document>> run_pipeline(const bson::array&,
                                                            const std::vector<doc_ptr>& input) {
  std::vector<bson::document> out;
  for (const auto& d : input)
    out.push_back(*d);
  return out;
}

}  // namespace mongo_emulator
