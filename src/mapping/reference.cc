#include "mapping/reference.h"

#include "bson/json.h"

namespace denormd::mapping {

namespace {

// A sample value of each BSON type, to rank the types with bson::canonical_rank.
const std::vector<std::pair<bson::type, bson::value>>& type_samples() {
  static const std::vector<std::pair<bson::type, bson::value>> samples = {
      {bson::type::min_key, bson::min_key{}},
      {bson::type::null, bson::null_t{}},
      {bson::type::undefined, bson::undefined_t{}},
      {bson::type::int32, std::int32_t{0}},
      {bson::type::int64, std::int64_t{0}},
      {bson::type::double_, 0.0},
      {bson::type::decimal128, bson::decimal128{}},
      {bson::type::string, ""},
      {bson::type::symbol, bson::symbol{}},
      {bson::type::document, bson::document{}},
      {bson::type::array, bson::array{}},
      {bson::type::binary, bson::binary{}},
      {bson::type::oid, bson::oid{}},
      {bson::type::boolean, false},
      {bson::type::date, bson::date_time{}},
      {bson::type::timestamp, bson::timestamp{}},
      {bson::type::regex, bson::regex{}},
      {bson::type::code, bson::code{}},
      {bson::type::max_key, bson::max_key{}},
  };
  return samples;
}

}  // namespace

bson::document after_key_filter(const bson::value& last) {
  const int rank = bson::canonical_rank(last);
  bson::array later;
  for (const auto& [t, sample] : type_samples()) {
    if (bson::canonical_rank(sample) > rank) later.push_back(static_cast<std::int32_t>(t));
  }
  bson::document after{{"_id", bson::document{{"$gt", last}}}};
  if (later.empty()) return after;
  return bson::document{
      {"$or", bson::array{after, bson::document{{"_id", bson::document{{"$type", later}}}}}}};
}

std::optional<std::string> reference_problem(const bson::value& v) {
  switch (v.kind()) {
    case bson::type::array:
      return "an array (MongoDB's equality would match each of its elements)";
    case bson::type::regex:
      return "a regular expression (it would match as a pattern)";
    case bson::type::undefined:
      return "undefined";
    case bson::type::document:
      for (const auto& f : v.as_document()) {
        if (f.name.starts_with('$')) {
          return "a document with the $-prefixed field " + describe_value(f.name, 60) +
                 " (it would read as a query operator)";
        }
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bson::document literal(const bson::value& v) {
  return bson::document{{"$eq", v}};
}

namespace {

// Adds {$not: {$type: "array"}} to a condition on `field` unless its last component is _id,
// which is never an array.
bson::document not_an_array(std::string_view field, bson::document match) {
  const auto dot = field.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? field : field.substr(dot + 1);
  if (leaf != "_id") match.append("$not", bson::document{{"$type", "array"}});
  return match;
}

}  // namespace

bson::document key_match(std::string_view field, const bson::value& key) {
  return not_an_array(field, literal(key));
}

bson::document keys_match(std::string_view field, const bson::array& keys) {
  return not_an_array(field, bson::document{{"$in", keys}});
}

std::string describe_value(const bson::value& v, std::size_t max) {
  std::string text = bson::to_json(v);
  if (text.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut;
    text.resize(cut);
    text += "...";
  }
  return text;
}

std::string reference_reason(const reference_site& at, const bson::value& v,
                             std::string_view problem) {
  std::string out = "mapping \"";
  out.append(at.mapping).append("\": ").append(at.role).append(" \"").append(at.field);
  out.append("\" of ").append(at.ns);
  if (at.id != nullptr) out.append(" {\"_id\": ").append(describe_value(*at.id, 100)).append("}");
  out.append(" is ").append(describe_value(v)).append(", ").append(problem);
  out.append("; not a reference, so it is not followed");
  return out;
}

}  // namespace denormd::mapping
