#include "mapping/spec_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "bson/json.h"

namespace denormd::mapping {

namespace {

bool is_subset_operator(std::string_view k) {
  static const std::set<std::string_view> ops = {"$eq", "$ne",  "$gt",     "$gte", "$lt", "$lte",
                                                 "$in", "$nin", "$exists", "$and", "$or", "$not"};
  return ops.contains(k);
}

}  // namespace

bool is_extended_json_key(std::string_view k) {
  static const std::set<std::string_view> keys = {
      "$oid",           "$date",      "$numberLong", "$numberInt", "$numberDouble",
      "$numberDecimal", "$binary",    "$uuid",       "$timestamp", "$minKey",
      "$maxKey",        "$undefined", "$symbol",     "$code",      "$regularExpression"};
  return keys.contains(k);
}

std::string closest_name(std::string_view name, std::span<const std::string_view> candidates) {
  const auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
      row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t prev = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t cur = row[j];
        const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                          std::tolower(static_cast<unsigned char>(b[j - 1]));
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (same ? 0 : 1)});
        prev = cur;
      }
    }
    return row[b.size()];
  };
  std::string_view best;
  std::size_t best_distance = 3;
  for (const auto candidate : candidates) {
    const std::size_t d = distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return std::string(best);
}

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

void read_fields(spec_reader& r, spec_object& root, mapping& m,
                 const std::function<void(const std::string& pointer, const std::string& name,
                                          const json& value)>& entry) {
  const json* fields = root.sub_object("fields", true);
  if (fields == nullptr) return;
  if (fields->empty()) r.error("/fields", "must name at least one field");
  for (auto it = fields->begin(); it != fields->end(); ++it) {
    const std::string here = pointer_join("/fields", it.key());
    if (auto problem = path_problem(it.key()); !problem.empty()) {
      r.error(here, "\"" + it.key() + "\" is not a valid field name: it " + problem);
      continue;
    }
    entry(here, it.key(), *it);
  }
  // Names are distinct (the reader rejects duplicate keys), so only prefixes can overlap.
  const auto names = field_names(m);
  for (const auto& f : m.fields) {
    for_each_parent(f.name, [&](std::string_view parent) {
      if (names.contains(parent)) {
        r.error(pointer_join("/fields", f.name),
                "overlaps field \"" + std::string(parent) + "\" of the same mapping");
      }
    });
  }
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

// The BSON form of a query's JSON, built directly from the parsed tree; only an Extended JSON
// wrapper ({"$date": ...}, a small object) goes through libbson's parser. scan_query has
// bounded the depth. nullopt (with an error) when a value has no BSON form.
std::optional<bson::value> query_value(spec_reader& r, const json& j, const std::string& pointer) {
  switch (j.type()) {
    case json::value_t::null:
      return bson::value(bson::null_t{});
    case json::value_t::boolean:
      return bson::value(j.get<bool>());
    case json::value_t::string:
      return bson::value(j.get<std::string>());
    case json::value_t::number_float:
      return bson::value(j.get<double>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      // As libbson reads JSON numbers: int32 when it fits, else int64.
      if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) {
        r.error(pointer, "the number " + j.dump() + " is out of range for a 64-bit integer");
        return std::nullopt;
      }
      const std::int64_t n = j.get<std::int64_t>();
      if (n >= INT32_MIN && n <= INT32_MAX) return bson::value(static_cast<std::int32_t>(n));
      return bson::value(n);
    }
    case json::value_t::array: {
      bson::array a;
      a.reserve(j.size());
      for (std::size_t i = 0; i < j.size(); ++i) {
        auto v = query_value(r, j[i], pointer_join(pointer, std::to_string(i)));
        if (!v) return std::nullopt;
        a.push_back(std::move(*v));
      }
      return bson::value(std::move(a));
    }
    case json::value_t::object: {
      if (!j.empty() && is_extended_json_key(j.begin().key())) {
        auto wrapped = bson::parse_json("{\"v\":" + j.dump() + "}");
        if (!wrapped) {
          r.error(pointer, "is not valid Extended JSON: " + wrapped.error().message);
          return std::nullopt;
        }
        return *wrapped->get("v");
      }
      bson::document d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string here = pointer_join(pointer, it.key());
        if (it.key().find('\0') != std::string::npos) {
          r.error(here, "a field name must not contain a NUL character");
          return std::nullopt;
        }
        auto v = query_value(r, it.value(), here);
        if (!v) return std::nullopt;
        d.append(it.key(), std::move(*v));
      }
      return bson::value(std::move(d));
    }
    default:
      r.error(pointer, "has no BSON form");
      return std::nullopt;
  }
}

}  // namespace

std::optional<query::matcher> read_query(spec_reader& r, const json& j,
                                         const std::string& pointer) {
  if (!j.is_object()) {
    r.error(pointer, "must be a query object, not " + json_type(j));
    return std::nullopt;
  }
  if (!scan_query(r, j, pointer)) return std::nullopt;
  auto doc = query_value(r, j, pointer);
  if (!doc) return std::nullopt;
  if (!doc->is<bson::document>()) {
    r.error(pointer, "must be a query object, not an Extended JSON value");
    return std::nullopt;
  }
  auto m = query::matcher::compile(doc->as<bson::document>(), query::op_set::mapping_subset);
  if (!m) {
    r.error(pointer + m.error().pointer, m.error().message);
    return std::nullopt;
  }
  return std::move(m).value();
}

}  // namespace denormd::mapping
