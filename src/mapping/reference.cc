#include "mapping/reference.h"

#include "bson/json.h"

namespace denormd::mapping {

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
