#include "sink/failing_children.h"

namespace denormd::sink {

namespace {

constexpr std::size_t page_size = 500;  // documents evaluated per round trip (as the evaluator)

}  // namespace

mongo::result<std::vector<mapping::failing_child>> find_failing_children(
    mongo::document_client& conn, computed_evaluator& eval, const mapping::mapping& m,
    const bson::document& filter, const std::string& parent_path, std::size_t limit) {
  const mapping::mapping* one = &m;
  const mapping::computed_fields fields(std::span<const mapping::mapping* const>(&one, 1));
  std::vector<mapping::failing_child> out;
  if (fields.empty() || limit == 0) return out;
  mongo::find_options read;
  if (!fields.reads_whole_document()) {
    read.projection = bson::document{{"_id", 1}};
    read.projection.append(parent_path.substr(0, parent_path.find('.')), 1);
    for (const auto& f : fields.top_fields()) {
      if (!read.projection.contains(f)) read.projection.append(f, 1);
    }
  }
  read.sort = bson::document{{"_id", 1}};
  read.batch_size = static_cast<std::int32_t>(page_size);
  std::vector<bson::document> page;
  std::optional<mongo::driver_error> failed;
  auto evaluate = [&]() -> bool {
    std::vector<bson::document> inputs;
    std::vector<bson::document*> docs;
    for (auto& d : page) {
      inputs.push_back(fields.input(d));
      docs.push_back(&d);
    }
    auto failures = eval.evaluate(m.source.db, fields, docs);
    if (!failures) {
      failed = failures.error();
      return false;
    }
    for (auto& f : *failures) {
      if (out.size() == limit) break;
      const bson::value* parent = page[f.doc].find_path(parent_path);
      bson::document unchanged = fields.same_input(inputs[f.doc]);
      out.push_back(mapping::failing_child{
          std::move(f.what.key), std::move(inputs[f.doc]), std::move(unchanged),
          parent != nullptr ? *parent : bson::value(), std::move(f.what.error)});
    }
    page.clear();
    return out.size() < limit;
  };
  auto st = conn.find_each(m.source.db, m.source.coll, filter, read, [&](bson::document&& d) {
    page.push_back(std::move(d));
    return page.size() < page_size || evaluate();
  });
  if (failed) return *failed;
  if (!st) return st.error();
  if (!page.empty() && out.size() < limit && !evaluate()) {
    if (failed) return *failed;
  }
  return out;
}

}  // namespace denormd::sink
