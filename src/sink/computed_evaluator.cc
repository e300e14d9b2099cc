#include "sink/computed_evaluator.h"

#include <algorithm>

#include "bson/convert.h"
#include "mapping/computed_expression.h"

namespace denormd::sink {

namespace {

// A chunk's documents: few enough, and small enough together, that the command stays far
// below the 16 MiB a message may carry, with room for the values that come back.
constexpr std::size_t chunk_docs = 500;
constexpr std::size_t chunk_bytes = 4 * 1024 * 1024;

std::size_t bytes_of(const bson::document& doc) {
  std::vector<std::uint8_t> buf;
  bson::append_bytes(doc, buf);
  return buf.size();
}

}  // namespace

bool refused_for_the_data(const mongo::driver_error& e) {
  if (e.from != mongo::driver_error::origin::server || e.transient()) return false;
  // Refusals that any document would get: rights, an unknown stage or operator (a server
  // older than the expression), a command the server does not know.
  static constexpr std::uint32_t not_the_data[] = {13, 18, 59, 115, 168, 40324};
  return std::find(std::begin(not_the_data), std::end(not_the_data), e.code) ==
         std::end(not_the_data);
}

mongo::result<std::vector<bson::document>> computed_evaluator::run(
    const std::string& db, const bson::document& projection,
    std::span<const bson::document> inputs) {
  bson::array literal(inputs.begin(), inputs.end());
  const bson::array pipeline{
      bson::document{{"$documents", bson::document{{"$literal", std::move(literal)}}}},
      bson::document{{"$project", projection}}};
  ++calls_;
  auto out = conn_.aggregate(db, "", pipeline);
  if (out && out->size() != inputs.size()) {
    return mongo::failure(mongo::driver_error{mongo::driver_error::origin::client,
                                              0,
                                              "computed fields: the server returned " +
                                                  std::to_string(out->size()) + " results for " +
                                                  std::to_string(inputs.size()) + " documents",
                                              {}});
  }
  return out;
}

mongo::status computed_evaluator::evaluate_one(const std::string& db,
                                               const mapping::computed_fields& fields,
                                               bson::document& doc, const bson::document& input,
                                               std::size_t index,
                                               const mongo::driver_error& refusal,
                                               std::vector<failure>& out) {
  bson::document values;
  bool any_failed = false;
  for (const auto& e : fields.entries()) {
    const std::string key = e.expression->key();
    auto one = run(db, fields.projection(std::span<const std::string>(&key, 1)),
                   std::span<const bson::document>(&input, 1));
    if (one) {
      for (auto& f : one->front().fields())
        values.append(std::move(f.name), std::move(f.val));
      continue;
    }
    if (!refused_for_the_data(one.error())) return one.error();
    any_failed = true;
    out.push_back({index, {key, one.error().to_string(), false}});
  }
  if (!any_failed) {
    // Each alone passes, all together not (their values together too large, say): all fail.
    values = {};
    for (const auto& e : fields.entries())
      out.push_back({index, {e.expression->key(), refusal.to_string(), false}});
  }
  mapping::computed_fields::put(doc, std::move(values));
  return {};
}

mongo::status computed_evaluator::evaluate_range(const std::string& db,
                                                 const mapping::computed_fields& fields,
                                                 std::span<bson::document* const> docs,
                                                 std::span<const bson::document> inputs,
                                                 std::size_t from, std::size_t to,
                                                 std::vector<failure>& out) {
  auto values = run(db, fields.projection(), inputs.subspan(from, to - from));
  if (values) {
    for (std::size_t i = from; i < to; ++i)
      mapping::computed_fields::put(*docs[i], std::move((*values)[i - from]));
    return {};
  }
  if (!refused_for_the_data(values.error())) return values.error();
  if (to - from == 1) {
    return evaluate_one(db, fields, *docs[from], inputs[from], from, values.error(), out);
  }
  // Halves: a refused document costs about log2(chunk) more round trips, not one per document.
  const std::size_t mid = from + (to - from) / 2;
  if (auto st = evaluate_range(db, fields, docs, inputs, from, mid, out); !st) return st;
  return evaluate_range(db, fields, docs, inputs, mid, to, out);
}

mongo::result<std::vector<computed_evaluator::failure>> computed_evaluator::evaluate(
    const std::string& db, const mapping::computed_fields& fields,
    std::span<bson::document* const> docs) {
  std::vector<failure> out;
  if (fields.empty() || docs.empty()) return out;
  std::vector<bson::document> inputs;
  inputs.reserve(docs.size());
  for (const bson::document* d : docs)
    inputs.push_back(fields.input(*d));
  std::size_t from = 0;
  while (from < docs.size()) {
    std::size_t to = from;
    std::size_t bytes = 0;
    while (to < docs.size() && to - from < chunk_docs) {
      const std::size_t size = bytes_of(inputs[to]);
      if (to > from && bytes + size > chunk_bytes) break;
      bytes += size;
      ++to;
    }
    if (auto st = evaluate_range(db, fields, docs, inputs, from, to, out); !st) return st.error();
    from = to;
  }
  return out;
}

}  // namespace denormd::sink
