#include "mapping/spec_reader.h"

#include "bson/json.h"

namespace denormd::mapping {

namespace {

// Extended JSON wrapper keys: values, not query operators.
bool is_extended_json_key(std::string_view k) {
  static const std::set<std::string_view> keys = {
      "$oid",           "$date",      "$numberLong", "$numberInt", "$numberDouble",
      "$numberDecimal", "$binary",    "$uuid",       "$timestamp", "$minKey",
      "$maxKey",        "$undefined", "$symbol",     "$code",      "$regularExpression"};
  return keys.contains(k);
}

bool is_subset_operator(std::string_view k) {
  static const std::set<std::string_view> ops = {"$eq", "$ne",  "$gt",     "$gte", "$lt", "$lte",
                                                 "$in", "$nin", "$exists", "$and", "$or", "$not"};
  return ops.contains(k);
}

}  // namespace

std::string load_error::to_string() const {
  std::string out = file;
  out += ": ";
  out += pointer.empty() ? "/" : pointer;
  out += ": ";
  out += message;
  return out;
}

std::string json_type(const json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  return "null";
}

std::string path_problem(const std::string& path) {
  if (path.empty()) return "must not be empty";
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string part = path.substr(start, dot - start);
    if (part.empty()) return "has an empty component";
    if (part[0] == '$') return "has a component starting with '$'";
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (path.find('\0') != std::string::npos) return "contains a NUL character";
  return "";
}

std::unordered_set<std::string_view> field_names(const mapping& m) {
  std::unordered_set<std::string_view> names;
  for (const auto& f : m.fields)
    names.insert(f.name);
  return names;
}

// Rejects query operators outside the subset before libbson sees them (it would read
// "$type"/"$regex" as legacy Extended JSON and give a confusing message).
namespace {

bool scan_query(spec_reader& r, const json& j, const std::string& pointer, int depth = 1) {
  bool ok = true;
  if ((j.is_object() || j.is_array()) && depth > max_query_depth) {
    r.error(pointer, "the query nests objects and arrays deeper than " +
                         std::to_string(max_query_depth) +
                         " levels (the limit of mapping queries)");
    return false;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const std::string here = pointer_join(pointer, k);
      if (k.starts_with('$') && !is_extended_json_key(k) && !is_subset_operator(k)) {
        r.error(here, "operator " + k +
                          " is not supported in mapping queries (supported: equality, $eq $ne "
                          "$gt $gte $lt $lte $in $nin $exists $and $or $not)");
        ok = false;
        continue;
      }
      ok = scan_query(r, it.value(), here, depth + 1) && ok;
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      ok = scan_query(r, j[i], pointer_join(pointer, std::to_string(i)), depth + 1) && ok;
    }
  }
  return ok;
}

}  // namespace

std::optional<query::matcher> read_query(spec_reader& r, const json& j,
                                         const std::string& pointer) {
  if (!j.is_object()) {
    r.error(pointer, "must be a query object, not " + json_type(j));
    return std::nullopt;
  }
  if (!scan_query(r, j, pointer)) return std::nullopt;
  auto doc = bson::parse_json(j.dump());
  if (!doc) {
    r.error(pointer, "is not valid Extended JSON: " + doc.error().message);
    return std::nullopt;
  }
  auto m = query::matcher::compile(*doc, query::op_set::mapping_subset);
  if (!m) {
    r.error(pointer + m.error().pointer, m.error().message);
    return std::nullopt;
  }
  return std::move(m).value();
}

}  // namespace denormd::mapping
