#include "pipeline.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>

#include "expression.h"
#include "field_path.h"
#include "numeric.h"
#include "projection.h"
#include "query/matcher.h"
#include "query_operators.h"
#include "sort_spec.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
namespace query = denormd::query;
using denormd::expected;
using denormd::fail;

namespace {

constexpr int bad_value = 2;
constexpr int failed_to_parse = 9;
constexpr int type_mismatch = 14;

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

std::string type_of(const bson::value& v) {
  return std::string(bson::type_name(v.kind()));
}

// $addFields' assignment: through documents, into every element of an array on the way
// (non-documents there become documents), replacing scalars.
void set_at(bson::document& d, const std::vector<std::string>& parts, std::size_t i,
            const bson::value& v) {
  if (i + 1 == parts.size()) {
    d.set(parts[i], v);
    return;
  }
  bson::value* child = d.get(parts[i]);
  if (child == nullptr) child = &d.append(parts[i], bson::document{});
  if (child->is_array()) {
    for (auto& e : child->as_array()) {
      if (!e.is_document()) e = bson::document{};
      set_at(e.as_document(), parts, i + 1, v);
    }
    return;
  }
  if (!child->is_document()) *child = bson::document{};
  set_at(child->as_document(), parts, i + 1, v);
}

void remove_at(bson::document& d, const std::vector<std::string>& parts, std::size_t i) {
  if (i + 1 == parts.size()) {
    d.erase(parts[i]);
    return;
  }
  bson::value* child = d.get(parts[i]);
  if (child == nullptr) return;
  if (child->is_document()) remove_at(child->as_document(), parts, i + 1);
  if (child->is_array()) {
    for (auto& e : child->as_array()) {
      if (e.is_document()) remove_at(e.as_document(), parts, i + 1);
    }
  }
}

// The value at a path through documents only ($unwind does not look into arrays on the way).
const bson::value* document_path(const bson::document& d, const std::vector<std::string>& parts) {
  const bson::value* current = d.get(parts.front());
  for (std::size_t i = 1; i < parts.size() && current != nullptr; ++i) {
    current = current->is_document() ? current->as_document().get(parts[i]) : nullptr;
  }
  return current;
}

// MatchExpressionParser::parseIntegerElementToNonNegativeLong, for $skip and $limit.
expected<std::int64_t> non_negative_integer(const std::string& stage, const bson::value& v) {
  const std::string text = element_text(stage, v);
  if (!v.is_number()) return fail("Expected a number in: " + text, failed_to_parse);
  const double d = v.to_double();
  std::int64_t n = 0;
  if (v.is<std::int32_t>() || v.is<std::int64_t>()) {
    n = v.is<std::int32_t>() ? v.as<std::int32_t>() : v.as<std::int64_t>();
  } else {
    if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
      return fail("Cannot represent as a 64-bit integer: " + text, failed_to_parse);
    }
    if (d != static_cast<double>(static_cast<std::int64_t>(d))) {
      return fail("Expected an integer: " + text, failed_to_parse);
    }
    n = static_cast<std::int64_t>(d);
  }
  if (n < 0) return fail("Expected a positive number in: " + text, failed_to_parse);
  return n;
}

struct accumulator {
  std::string field;
  std::string op;
  expression arg;
};

struct accumulator_state {
  bson::value value;  // $min/$max/$first/$last value
  bool seen = false;
  number_sum total;        // $sum, $count, $avg
  std::int64_t count = 0;  // $avg
  bson::array items;       // $push, $addToSet
};

bool is_nullish(const bson::value& v) {
  return v.is_null() || v.is<bson::undefined_t>();
}

void accumulate(const accumulator& acc, accumulator_state& st, const bson::document& doc) {
  const auto v = acc.arg.evaluate(doc);
  if (acc.op == "$sum" || acc.op == "$count") {
    if (v && v->is_number()) st.total.add(*v);  // non-numbers are ignored, as MongoDB does
  } else if (acc.op == "$avg") {
    if (v && v->is_number()) {
      st.total.add(*v);
      ++st.count;
    }
  } else if (acc.op == "$min" || acc.op == "$max") {
    if (!v || is_nullish(*v)) return;
    const int c = st.seen ? bson::compare(*v, st.value) : 0;
    if (!st.seen || (acc.op == "$min" ? c < 0 : c > 0)) st.value = *v;
    st.seen = true;
  } else if (acc.op == "$first") {
    if (!st.seen) st.value = v.value_or(bson::value{});
    st.seen = true;
  } else if (acc.op == "$last") {
    st.value = v.value_or(bson::value{});
    st.seen = true;
  } else if (acc.op == "$push") {
    if (v) st.items.push_back(*v);
  } else if (acc.op == "$addToSet") {
    if (v && std::none_of(st.items.begin(), st.items.end(),
                          [&](const bson::value& e) { return bson::compare(e, *v) == 0; })) {
      st.items.push_back(*v);
    }
  }
}

bson::value result_of(const accumulator& acc, const accumulator_state& st) {
  if (acc.op == "$sum" || acc.op == "$count") return st.total.sum();
  if (acc.op == "$avg") return st.count == 0 ? bson::value{} : st.total.average(st.count);
  if (acc.op == "$min" || acc.op == "$max") return st.seen ? st.value : bson::value{};
  if (acc.op == "$push" || acc.op == "$addToSet") return st.items;
  return st.value;
}

bool is_known_unsupported_stage(std::string_view name) {
  static constexpr std::array<std::string_view, 20> names = {
      "$lookup",     "$facet",          "$bucket",          "$bucketAuto",   "$graphLookup",
      "$out",        "$merge",          "$geoNear",         "$redact",       "$sortByCount",
      "$densify",    "$fill",           "$setWindowFields", "$unionWith",    "$collStats",
      "$indexStats", "$planCacheStats", "$currentOp",       "$listSessions", "$changeStream"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

struct pipeline_stage::impl {
  enum class kind {
    match,
    sort,
    skip,
    limit,
    project,
    add_fields,
    unset,
    replace_root,
    unwind,
    group,
    count,
    sample
  };
  kind k = kind::match;
  std::string name;
  std::optional<query::matcher> matcher;
  std::optional<sort_spec> sort;
  std::int64_t n = 0;
  std::optional<projection> proj;                                       // $project, $unset
  std::vector<std::pair<std::vector<std::string>, expression>> fields;  // $addFields
  std::optional<expression> expr;  // $replaceRoot/$replaceWith, $group _id
  std::vector<std::string> path;   // $unwind
  std::string path_text;
  std::optional<std::string> index_field;
  bool preserve = false;
  std::vector<accumulator> accumulators;  // $group
  std::string count_field;                // $count

  expected<std::optional<bson::document>> transform(bson::document doc) const;
  expected<std::vector<bson::document>> run(std::vector<bson::document> docs) const;
};

namespace {

using stage_impl = pipeline_stage::impl;

denormd::status parse_add_fields(stage_impl& s, const bson::document& spec,
                                 const std::string& prefix, const bson::document* let) {
  for (const auto& f : spec) {
    const std::string path = prefix.empty() ? f.name : prefix + "." + f.name;
    if (auto c = check_field_path(path); !c) return c;
    if (f.val.is_document() && !f.val.as_document().empty() &&
        !f.val.as_document().fields().front().name.starts_with('$')) {
      // A nested document adds fields inside the existing one.
      if (auto c = parse_add_fields(s, f.val.as_document(), path, let); !c) return c;
      continue;
    }
    auto e = expression::parse(f.val, let);
    if (!e) return propagate(e.error());
    s.fields.emplace_back(split_path(path), std::move(e).value());
  }
  return {};
}

expected<stage_impl> parse_group(const bson::value& arg, const bson::document* let) {
  stage_impl s;
  s.k = stage_impl::kind::group;
  if (!arg.is_document()) return fail("a group's fields must be specified in an object", 15947);
  bool has_id = false;
  for (const auto& f : arg.as_document()) {
    if (f.name == "_id") {
      auto e = expression::parse(f.val, let);
      if (!e) return propagate(e.error());
      s.expr = std::move(e).value();
      has_id = true;
      continue;
    }
    if (f.name.find('.') != std::string::npos) {
      return fail("the group aggregate field name '" + f.name +
                      "' cannot be used because $group's field names cannot contain '.'",
                  40235);
    }
    if (f.name.starts_with('$')) {
      return fail("the group aggregate field name '" + f.name + "' cannot be an operator name",
                  40236);
    }
    if (!f.val.is_document()) {
      return fail("The field '" + f.name + "' must be an accumulator object", 40234);
    }
    const auto& spec = f.val.as_document();
    if (spec.size() != 1)
      return fail("The field '" + f.name + "' must specify one accumulator", 40238);
    const auto& op = spec.fields().front();
    static constexpr std::array<std::string_view, 9> known = {
        "$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count"};
    if (std::find(known.begin(), known.end(), op.name) == known.end()) {
      return fail("unknown group operator '" + op.name + "'", 15952);
    }
    expression arg_expr = expression::constant(bson::value(std::int32_t{1}));
    if (op.name == "$count") {
      if (!op.val.is_document() || !op.val.as_document().empty()) {
        return fail("$count takes no arguments, i.e. $count:{}", 5145200);
      }
    } else {
      auto e = expression::parse(op.val, let);
      if (!e) return propagate(e.error());
      arg_expr = std::move(e).value();
    }
    s.accumulators.push_back({f.name, op.name, std::move(arg_expr)});
  }
  if (!has_id) return fail("a group specification must include an _id", 15955);
  return s;
}

expected<stage_impl> parse_unwind(const bson::value& arg) {
  stage_impl s;
  s.k = stage_impl::kind::unwind;
  std::string path;
  if (arg.is_string()) {
    path = arg.as_string();
  } else if (arg.is_document()) {
    bool has_path = false;
    for (const auto& f : arg.as_document()) {
      if (f.name == "path") {
        if (!f.val.is_string()) {
          return fail("expected a string as the path for $unwind stage, got " + type_of(f.val),
                      28808);
        }
        path = f.val.as_string();
        has_path = true;
      } else if (f.name == "includeArrayIndex") {
        if (!f.val.is_string()) {
          return fail(
              "expected a non-empty string for the includeArrayIndex  option to $unwind "
              "stage, got " +
                  type_of(f.val),
              28810);
        }
        if (f.val.as_string().starts_with('$')) {
          return fail(
              "includeArrayIndex option to $unwind stage should not be prefixed with a "
              "'$': " +
                  f.val.as_string(),
              28822);
        }
        s.index_field = f.val.as_string();
      } else if (f.name == "preserveNullAndEmptyArrays") {
        if (!f.val.is<bool>()) {
          return fail(
              "expected a boolean for the preserveNullAndEmptyArrays option to $unwind "
              "stage, got " +
                  type_of(f.val),
              28809);
        }
        s.preserve = f.val.as<bool>();
      } else {
        return fail("unrecognized option to $unwind stage: " + f.name, 28811);
      }
    }
    if (!has_path) return fail("no path specified to $unwind stage", 28812);
  } else {
    return fail("expected either a string or an object as specification for $unwind stage, got " +
                    type_of(arg),
                15981);
  }
  if (!path.starts_with('$')) {
    return fail("path option to $unwind stage should be prefixed with a '$': " + path, 28818);
  }
  if (auto c = check_field_path(path.substr(1)); !c) return propagate(c.error());
  s.path_text = path.substr(1);
  s.path = split_path(s.path_text);
  return s;
}

// BSONElement::safeNumberLong: doubles truncate toward zero, saturating; NaN is 0.
std::int64_t safe_number_long(const bson::value& v) {
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  const double d = v.is<bson::decimal128>() ? v.as<bson::decimal128>().to_double() : v.to_double();
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return INT64_MAX;
  if (d < -9223372036854775808.0) return INT64_MIN;
  return static_cast<std::int64_t>(d);
}

// $sample as DocumentSourceSample::createFromBson (6.0) parses it.
expected<stage_impl> parse_sample(const bson::value& arg) {
  if (!arg.is_document()) return fail("the $sample stage specification must be an object", 28745);
  stage_impl s;
  s.k = stage_impl::kind::sample;
  bool has_size = false;
  for (const auto& f : arg.as_document()) {
    if (f.name != "size") return fail("unrecognized option to $sample: " + f.name, 28748);
    if (!f.val.is_number()) return fail("size argument to $sample must be a number", 28746);
    s.n = safe_number_long(f.val);
    if (s.n < 0) return fail("size argument to $sample must not be negative", 28747);
    has_size = true;
  }
  if (!has_size) return fail("$sample stage must specify a size", 28749);
  return s;
}

expected<stage_impl> parse_stage_impl(const std::string& name, const bson::value& arg,
                                      const bson::document* let) {
  stage_impl s;
  if (name == "$match") {
    if (!arg.is_document())
      return fail("the match filter must be an expression in an object", 15959);
    auto m = compile_query(arg.as_document(), let);
    if (!m) return fail(m.error().message, m.error().code);
    s.k = stage_impl::kind::match;
    s.matcher = std::move(m).value();
  } else if (name == "$sort") {
    if (!arg.is_document()) return fail("the $sort key specification must be an object", 15973);
    if (arg.as_document().empty())
      return fail("$sort stage must have at least one sort key", 15976);
    auto spec = sort_spec::parse(arg.as_document());
    if (!spec) return propagate(spec.error());
    s.k = stage_impl::kind::sort;
    s.sort = std::move(spec).value();
  } else if (name == "$skip" || name == "$limit") {
    auto n = non_negative_integer(name, arg);
    if (!n) {
      return fail("invalid argument to " + name + " stage: " + n.error().message,
                  name == "$skip" ? 5107200 : 5107201);
    }
    if (name == "$limit" && *n == 0) return fail("the limit must be positive", 15958);
    s.k = name == "$skip" ? stage_impl::kind::skip : stage_impl::kind::limit;
    s.n = *n;
  } else if (name == "$project") {
    if (!arg.is_document()) return fail("$project specification must be an object", 15969);
    if (arg.as_document().empty()) {
      return fail(
          "Invalid $project :: caused by :: projection specification must have at least "
          "one field",
          51272);
    }
    auto p = projection::parse(arg.as_document(), projection::flavour::aggregate, let);
    if (!p) return fail("Invalid $project :: caused by :: " + p.error().message, p.error().code);
    s.k = stage_impl::kind::project;
    s.proj = std::move(p).value();
  } else if (name == "$addFields" || name == "$set") {
    if (!arg.is_document()) {
      return fail(name + " specification stage must be an object, got " + type_of(arg), 40272);
    }
    s.k = stage_impl::kind::add_fields;
    if (auto c = parse_add_fields(s, arg.as_document(), "", let); !c) return propagate(c.error());
  } else if (name == "$unset") {
    bson::document spec;
    if (arg.is_string()) {
      spec.append(arg.as_string(), std::int32_t{0});
    } else if (arg.is_array()) {
      if (arg.as_array().empty()) {
        return fail("$unset specification must be a string or an array with at least one field",
                    31119);
      }
      for (const auto& item : arg.as_array()) {
        if (!item.is_string()) {
          return fail(
              "$unset specification must be a string or an array containing only string "
              "values",
              31120);
        }
        spec.append(item.as_string(), std::int32_t{0});
      }
    } else {
      return fail("$unset specification must be a string or an array", 31002);
    }
    auto p = projection::parse(spec, projection::flavour::aggregate);
    if (!p) return propagate(p.error());
    s.k = stage_impl::kind::unset;
    s.proj = std::move(p).value();
  } else if (name == "$replaceRoot" || name == "$replaceWith") {
    const bson::value* root_spec = &arg;
    if (name == "$replaceRoot") {
      if (!arg.is_document()) {
        return fail("$replaceRoot stage specification must be an object, got " + type_of(arg),
                    type_mismatch);
      }
      root_spec = arg.as_document().get("newRoot");
      if (root_spec == nullptr) {
        return fail("BSON field '$replaceRoot.newRoot' is missing but a required field", 40414);
      }
    }
    auto e = expression::parse(*root_spec, let);
    if (!e) return propagate(e.error());
    s.k = stage_impl::kind::replace_root;
    s.expr = std::move(e).value();
  } else if (name == "$unwind") {
    return parse_unwind(arg);
  } else if (name == "$group") {
    return parse_group(arg, let);
  } else if (name == "$sample") {
    return parse_sample(arg);
  } else if (name == "$count") {
    if (!arg.is_string()) return fail("the count field must be a non-empty string", 40156);
    const std::string& field = arg.as_string();
    if (field.empty()) return fail("the count field must be a non-empty string", 40157);
    if (field.starts_with('$')) return fail("the count field cannot be a $-prefixed path", 40158);
    if (field.find('.') != std::string::npos)
      return fail("the count field cannot contain '.'", 40160);
    s.k = stage_impl::kind::count;
    s.count_field = field;
  } else if (name == "$documents") {
    // Only an {aggregate: 1} pipeline's first stage (documents_stage) is one.
    return fail("$documents is only valid as the first stage in a pipeline", 40602);
  } else if (is_known_unsupported_stage(name)) {
    return fail("The " + name + " stage is not supported by mongo-emulator", bad_value);
  } else {
    return fail("Unrecognized pipeline stage name: '" + name + "'", 40324);
  }
  return s;
}

}  // namespace

expected<std::optional<bson::document>> stage_impl::transform(bson::document doc) const {
  switch (k) {
    case kind::match:
      if (!matcher->matches(doc)) return std::optional<bson::document>{};
      return std::optional<bson::document>{std::move(doc)};
    case kind::project:
    case kind::unset:
      return std::optional<bson::document>{proj->apply(doc)};
    case kind::add_fields: {
      // Every expression sees the input document.
      bson::document out = doc;
      for (const auto& [parts, e] : fields) {
        if (auto v = e.evaluate(doc)) {
          set_at(out, parts, 0, *v);
        } else {
          remove_at(out, parts, 0);
        }
      }
      return std::optional<bson::document>{std::move(out)};
    }
    case kind::replace_root: {
      auto v = expr->evaluate(doc);
      if (!v || !v->is_document()) {
        const std::string what = name == "$replaceRoot" ? "'newRoot'" : "'replacement document'";
        return fail(what + " expression must evaluate to an object, but resulting value was: " +
                        (v ? value_text(*v) : "MISSING") + ". Type of resulting value: '" +
                        (v ? type_of(*v) : "missing") + "'. Input document: " + document_text(doc),
                    40228);
      }
      return std::optional<bson::document>{std::move(v->as_document())};
    }
    default:
      return fail(name + " is not a per-document stage", bad_value);
  }
}

expected<std::vector<bson::document>> stage_impl::run(std::vector<bson::document> docs) const {
  switch (k) {
    case kind::sort:
      sort->sort(docs);
      return docs;
    case kind::skip: {
      const auto skip = static_cast<std::size_t>(
          std::min<std::int64_t>(n, static_cast<std::int64_t>(docs.size())));
      docs.erase(docs.begin(), docs.begin() + static_cast<std::ptrdiff_t>(skip));
      return docs;
    }
    case kind::limit:
      if (static_cast<std::int64_t>(docs.size()) > n) docs.resize(static_cast<std::size_t>(n));
      return docs;
    case kind::sample: {
      // `n` documents chosen uniformly at random, in random order (MongoDB sorts by a random
      // value and keeps the first n).
      thread_local std::mt19937_64 random(std::random_device{}());
      std::shuffle(docs.begin(), docs.end(), random);
      if (static_cast<std::int64_t>(docs.size()) > n) docs.resize(static_cast<std::size_t>(n));
      return docs;
    }
    case kind::unwind: {
      std::vector<bson::document> out;
      for (auto& d : docs) {
        const bson::value* v = document_path(d, path);
        if (v != nullptr && v->is_array() && !v->as_array().empty()) {
          const bson::array items = v->as_array();
          for (std::size_t i = 0; i < items.size(); ++i) {
            bson::document copy = d;
            set_at(copy, path, 0, items[i]);
            if (index_field)
              set_at(copy, split_path(*index_field), 0, static_cast<std::int64_t>(i));
            out.push_back(std::move(copy));
          }
          continue;
        }
        const bool empty = v == nullptr || is_nullish(*v) || v->is_array();
        if (empty && !preserve) continue;
        if (index_field) set_at(d, split_path(*index_field), 0, bson::value{});
        out.push_back(std::move(d));
      }
      return out;
    }
    case kind::group: {
      struct group {
        bson::value id;
        std::vector<accumulator_state> states;
      };
      std::vector<group> groups;
      for (const auto& d : docs) {
        bson::value id = expr->evaluate(d).value_or(bson::value{});
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const group& g) { return bson::compare(g.id, id) == 0; });
        if (it == groups.end()) {
          groups.push_back({std::move(id), std::vector<accumulator_state>(accumulators.size())});
          it = groups.end() - 1;
        }
        for (std::size_t i = 0; i < accumulators.size(); ++i) {
          accumulate(accumulators[i], it->states[i], d);
        }
      }
      std::vector<bson::document> out;
      for (const auto& g : groups) {
        bson::document result{{"_id", g.id}};
        for (std::size_t i = 0; i < accumulators.size(); ++i) {
          result.append(accumulators[i].field, result_of(accumulators[i], g.states[i]));
        }
        out.push_back(std::move(result));
      }
      return out;
    }
    case kind::count: {
      if (docs.empty()) return std::vector<bson::document>{};
      const auto total = static_cast<std::int64_t>(docs.size());
      bson::value n_value =
          total <= INT32_MAX ? bson::value(static_cast<std::int32_t>(total)) : bson::value(total);
      return std::vector<bson::document>{bson::document{{count_field, n_value}}};
    }
    default: {
      std::vector<bson::document> out;
      for (auto& d : docs) {
        auto r = transform(std::move(d));
        if (!r) return propagate(r.error());
        if (*r) out.push_back(std::move(**r));
      }
      return out;
    }
  }
}

expected<pipeline_stage> pipeline_stage::parse(const bson::value& spec, const bson::document* let) {
  if (!spec.is_document()) {
    return fail("Each element of the 'pipeline' array must be an object", type_mismatch);
  }
  const auto& d = spec.as_document();
  if (d.size() != 1) {
    return fail("A pipeline stage specification object must contain exactly one field.", 40323);
  }
  const auto& f = d.fields().front();
  auto s = parse_stage_impl(f.name, f.val, let);
  if (!s) return propagate(s.error());
  s->name = f.name;
  pipeline_stage out;
  out.impl_ = std::make_shared<const impl>(std::move(s).value());
  return out;
}

const std::string& pipeline_stage::name() const {
  return impl_->name;
}

bool pipeline_stage::is_streaming() const {
  switch (impl_->k) {
    case impl::kind::match:
    case impl::kind::project:
    case impl::kind::add_fields:
    case impl::kind::unset:
    case impl::kind::replace_root:
      return true;
    default:
      return false;
  }
}

expected<std::optional<bson::document>> pipeline_stage::transform(bson::document doc) const {
  return impl_->transform(std::move(doc));
}

expected<std::vector<bson::document>> pipeline_stage::run(std::vector<bson::document> docs) const {
  return impl_->run(std::move(docs));
}

expected<std::vector<bson::document>> documents_stage(const bson::value& spec,
                                                      const bson::document* let) {
  auto e = expression::parse(spec, let);
  if (!e) return propagate(e.error());
  return catch_expression_errors([&]() -> expected<std::vector<bson::document>> {
    const auto v = e->evaluate(bson::document{});
    if (!v || !v->is_array()) return fail("an array is expected", 5858203);
    std::vector<bson::document> out;
    out.reserve(v->as_array().size());
    for (const auto& item : v->as_array()) {
      if (!item.is_document()) {
        // MongoDB's desugared stages hold each element in this field when they check it.
        const bson::document input{{"_tempDocumentsField", item}};
        return fail(
            "elements within the array passed to $documents must evaluate to an object, "
            "but resulting value was: " +
                value_text(item) + ". Type of resulting value: '" + type_of(item) +
                "'. Input document: " + document_text(input),
            40228);
      }
      out.push_back(item.as_document());
    }
    return out;
  });
}

expected<stage_list> parse_pipeline(const bson::array& stages, const bson::document* let) {
  stage_list out;
  for (const auto& s : stages) {
    auto stage = pipeline_stage::parse(s, let);
    if (!stage) return propagate(stage.error());
    out.push_back(std::move(stage).value());
  }
  return out;
}

expected<std::vector<bson::document>> run_pipeline(const stage_list& stages,
                                                   std::vector<bson::document> input) {
  for (const auto& s : stages) {
    auto r = s.run(std::move(input));
    if (!r) return r;
    input = std::move(r).value();
  }
  return input;
}

}  // namespace mongo_emulator::engine
