#include "query_operators.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/json_text.h"
#include "expression.h"
#include "query/path.h"
#include "query_regex.h"

namespace mongo_emulator::engine {

namespace query = denormd::query;
namespace bson = denormd::bson;

namespace {

using query::compile_error;
using compiled = denormd::expected<query::predicate_ptr, compile_error>;

denormd::unexpected<compile_error> bad(std::string pointer, std::string message) {
  return {compile_error{std::move(pointer), std::move(message), 2}};
}

// What a test over the branches of a path found: whether it held, and at which element of
// the first array the path went through (or of the leaf array it looked into).
struct hit {
  bool matched = false;
  std::optional<std::size_t> index;
};

using value_test = std::function<bool(const bson::value&)>;

// Follows `path` like the matcher's own leaves: each branch's value whole, then (when
// `element` is given) each element of a leaf array; a missing branch holds when `missing`.
hit first_hit(const bson::document& doc, const std::string& path, const value_test& whole,
              const value_test& element, bool missing) {
  hit h;
  query::resolve_branches(doc, path, [&](const bson::value* v, std::optional<std::size_t> index) {
    if (v == nullptr) {
      h.matched = missing;
    } else if (whole(*v)) {
      h.matched = true;
    } else if (element && v->is_array()) {
      const auto& items = v->as_array();
      for (std::size_t i = 0; i < items.size() && !h.matched; ++i) {
        if (!element(items[i])) continue;
        h.matched = true;
        if (!index) index = i;
      }
    }
    if (h.matched) h.index = index;
    return !h.matched;
  });
  return h;
}

// {path: {op: operand}} for the mapping language's comparisons ($eq $gt $gte $lt $lte $in).
hit comparison_hit(const bson::document& doc, const std::string& path, const std::string& op,
                   const bson::value& operand) {
  const value_test test = [&](const bson::value& v) { return query::test_value(op, v, operand); };
  return first_hit(doc, path, test, test, query::accepts_missing(op, operand));
}

// A predicate that can also say where it matched (for the positional index).
class located_predicate : public query::predicate {
 public:
  virtual hit find(const bson::document& doc) const = 0;
  bool matches(const bson::document& doc) const final { return find(doc).matched; }
};

using located_ptr = std::shared_ptr<const located_predicate>;

class size_predicate final : public located_predicate {
 public:
  size_predicate(std::string path, double size) : path_(std::move(path)), size_(size) {}
  hit find(const bson::document& doc) const override {
    return first_hit(
        doc, path_,
        [&](const bson::value& v) {
          return v.is_array() && static_cast<double>(v.as_array().size()) == size_;
        },
        nullptr, false);
  }

 private:
  std::string path_;
  double size_;
};

class type_predicate final : public located_predicate {
 public:
  type_predicate(std::string path, std::vector<int> codes)
      : path_(std::move(path)), codes_(std::move(codes)) {}
  hit find(const bson::document& doc) const override {
    const value_test whole = [&](const bson::value& v) {
      return std::any_of(codes_.begin(), codes_.end(), [&](int code) {
        return code == -1 ? v.is_number() : code == static_cast<int>(v.kind());
      });
    };
    // Elements of a leaf array are looked at one level deep: nested arrays are not.
    return first_hit(
        doc, path_, whole, [&](const bson::value& v) { return !v.is_array() && whole(v); }, false);
  }

 private:
  std::string path_;
  std::vector<int> codes_;  // BSON type codes; -1 means "number"
};

// A regex predicate on a path ($regex, a regex literal): strings it finds a match in, or the
// same regex value, whole or as an element of a leaf array; never a missing field.
hit regex_hit(const bson::document& doc, const std::string& path, const query_regex& re) {
  const value_test test = [&](const bson::value& v) { return re.matches(v); };
  return first_hit(doc, path, test, test, false);
}

class regex_predicate final : public located_predicate {
 public:
  regex_predicate(std::string path, query_regex re) : path_(std::move(path)), re_(std::move(re)) {}
  hit find(const bson::document& doc) const override { return regex_hit(doc, path_, re_); }

 private:
  std::string path_;
  query_regex re_;
};

// $in (and $nin, negated) whose list holds regexes: the matcher's own $in has no regexes, so
// compile_query renames these (in_with_regex below). A regex element matches as $regex does,
// the others as $in's equalities, null also a missing field.
class in_regex_predicate final : public located_predicate {
 public:
  in_regex_predicate(std::string path, bson::array values, std::vector<query_regex> regexes,
                     bool negated)
      : path_(std::move(path)),
        values_(std::move(values)),
        regexes_(std::move(regexes)),
        negated_(negated) {}
  hit find(const bson::document& doc) const override {
    const bson::value list(values_);
    const value_test test = [&](const bson::value& v) {
      return query::test_value("$in", v, list) ||
             std::any_of(regexes_.begin(), regexes_.end(),
                         [&](const query_regex& re) { return re.matches(v); });
    };
    hit h = first_hit(doc, path_, test, test, query::accepts_missing("$in", list));
    if (!negated_) return h;
    return {!h.matched, std::nullopt};  // a negation never locates an element
  }

 private:
  std::string path_;
  bson::array values_;
  std::vector<query_regex> regexes_;
  bool negated_;
};

class all_predicate final : public located_predicate {
 public:
  all_predicate(std::string path, bson::array items, std::vector<std::optional<query_regex>> res)
      : path_(std::move(path)), items_(std::move(items)), regexes_(std::move(res)) {}
  hit find(const bson::document& doc) const override {
    hit out;
    if (items_.empty()) return out;
    for (std::size_t i = 0; i < items_.size(); ++i) {
      const hit h = regexes_[i] ? regex_hit(doc, path_, *regexes_[i])
                                : comparison_hit(doc, path_, "$eq", items_[i]);
      if (!h.matched) return {};
      if (!out.index) out.index = h.index;
    }
    out.matched = true;
    return out;
  }

 private:
  std::string path_;
  bson::array items_;
  std::vector<std::optional<query_regex>> regexes_;  // per item: its regex, when it is one
};

// The key a value-form $elemMatch wraps each element under, so conditions can address it.
constexpr const char* element_key = "e";

class elem_match_predicate final : public located_predicate {
 public:
  elem_match_predicate(std::string path, bool value_form, query::matcher sub)
      : path_(std::move(path)), value_form_(value_form), sub_(std::move(sub)) {}
  hit find(const bson::document& doc) const override {
    hit h;
    query::resolve_path(doc, path_, [&](const bson::value& v, std::optional<std::size_t> index) {
      if (!v.is_array()) return true;
      const auto& items = v.as_array();
      for (std::size_t i = 0; i < items.size() && !h.matched; ++i) {
        h.matched = value_form_ ? sub_.matches(bson::document{{element_key, items[i]}})
                                : items[i].is_document() && sub_.matches(items[i].as_document());
        if (h.matched) h.index = index ? index : std::optional<std::size_t>(i);
      }
      return !h.matched;
    });
    return h;
  }

 private:
  std::string path_;
  bool value_form_;
  query::matcher sub_;
};

class nor_predicate final : public query::predicate {
 public:
  explicit nor_predicate(std::vector<query::matcher> items) : items_(std::move(items)) {}
  bool matches(const bson::document& doc) const override {
    return std::none_of(items_.begin(), items_.end(),
                        [&](const query::matcher& m) { return m.matches(doc); });
  }
  std::vector<std::string> paths() const override {
    std::vector<std::string> out;
    for (const auto& m : items_)
      out.insert(out.end(), m.paths().begin(), m.paths().end());
    return out;
  }

 private:
  std::vector<query::matcher> items_;
};

// BSON type code for $type, -1 for "number", 0 when unknown.
int type_code(const bson::value& v) {
  if (v.is_number()) {
    const double d = v.to_double();
    static constexpr int valid[] = {1,  2,  3,  4,  5,  6,  7,  8,   9, 10,
                                    11, 13, 14, 16, 17, 18, 19, 127, -1};
    for (const int c : valid) {
      if (d == c) return c;
    }
    if (d == -1) return 255;  // MinKey's alias code
    return 0;
  }
  if (!v.is_string()) return 0;
  if (v.as_string() == "number") return -1;
  static constexpr bson::type all[] = {
      bson::type::double_,    bson::type::string,    bson::type::document,  bson::type::array,
      bson::type::binary,     bson::type::undefined, bson::type::oid,       bson::type::boolean,
      bson::type::date,       bson::type::null,      bson::type::regex,     bson::type::code,
      bson::type::symbol,     bson::type::int32,     bson::type::timestamp, bson::type::int64,
      bson::type::decimal128, bson::type::min_key,   bson::type::max_key};
  for (const auto t : all) {
    if (bson::type_name(t) == v.as_string()) return static_cast<int>(t);
  }
  return 0;
}

std::string describe(const bson::value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_number()) return std::to_string(v.to_double());
  return std::string(bson::type_name(v.kind()));
}

// An error from compiling a sub-filter, moved under `pointer` (`strip`: a wrapper's prefix).
compile_error under(std::string pointer, compile_error e, std::size_t strip = 0) {
  e.pointer = pointer + e.pointer.substr(strip);
  return e;
}

// What compile_query renames `$in`/`$nin` to when their list holds a regex (the matcher's own
// $in compares regexes as values). Not MongoDB operators; no filter a client sends uses them.
const std::string in_with_regex = "$_inWithRegex";
const std::string nin_with_regex = "$_ninWithRegex";

// MongoDB query operators the emulator does not implement: refused (238) rather than reported
// as unknown (2), so a test that needs one says so.
bool is_unimplemented_field_operator(const std::string& op) {
  static constexpr std::string_view ops[] = {"$mod",          "$geoWithin",    "$geoIntersects",
                                             "$near",         "$nearSphere",   "$within",
                                             "$bitsAllSet",   "$bitsAllClear", "$bitsAnySet",
                                             "$bitsAnyClear", "$maxDistance",  "$minDistance"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_unimplemented_top_level_operator(const std::string& op) {
  static constexpr std::string_view ops[] = {"$where",      "$text",       "$jsonSchema",
                                             "$sampleRate", "$alwaysTrue", "$alwaysFalse"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

denormd::unexpected<compile_error> refuse_operator(const std::string& here, const std::string& op) {
  return {compile_error{here,
                        "mongo-emulator does not implement the query operator " + op +
                            ". It is refused rather than ignored (see tests/emulator/README.md).",
                        238}};
}

// {$expr: <aggregation expression>}: the document matches when the value is truthy.
class expr_predicate final : public query::predicate {
 public:
  explicit expr_predicate(expression e) : e_(std::move(e)) {}
  bool matches(const bson::document& doc) const override { return truthy(e_.evaluate(doc)); }

 private:
  expression e_;
};

class test_server_operators final : public query::operator_extension {
 public:
  // `let`: the command's variables, which $expr may read; must outlive compiling.
  explicit test_server_operators(const bson::document* let = nullptr) : let_(let) {}

  compiled field_operator(const std::string& path, const std::string& op, const bson::value& arg,
                          const std::string& here) const override {
    auto p = located(path, op, arg, here);
    if (!p) return p.error();
    return query::predicate_ptr(std::move(p).value());
  }

  compiled top_level_operator(const std::string& op, const bson::value& arg,
                              const std::string& here) const override {
    if (op == "$expr") {
      auto e = expression::parse(arg, let_);
      if (!e) return denormd::unexpected<compile_error>{{here, e.error().message, e.error().code}};
      return query::predicate_ptr(std::make_shared<expr_predicate>(std::move(e).value()));
    }
    if (is_unimplemented_top_level_operator(op)) return refuse_operator(here, op);
    if (op != "$nor") return query::predicate_ptr();
    if (!arg.is_array() || arg.as_array().empty())
      return bad(here, op + " must be a nonempty array");
    std::vector<query::matcher> items;
    for (std::size_t i = 0; i < arg.as_array().size(); ++i) {
      const std::string item_ptr = denormd::pointer_join(here, std::to_string(i));
      const auto& item = arg.as_array()[i];
      if (!item.is_document()) return bad(item_ptr, op + " argument's entries must be objects");
      auto m = query::matcher::compile(item.as_document(), *this);
      if (!m) return denormd::unexpected<compile_error>{under(item_ptr, m.error())};
      items.push_back(std::move(m).value());
    }
    return query::predicate_ptr(std::make_shared<nor_predicate>(std::move(items)));
  }

  // The field operators, as located predicates (nullptr: not one of them).
  denormd::expected<located_ptr, compile_error> located(const std::string& path,
                                                        const std::string& op,
                                                        const bson::value& arg,
                                                        const std::string& here) const {
    if (op == "$all") {
      if (!arg.is_array()) return bad(here, "$all needs an array");
      std::vector<std::optional<query_regex>> regexes;
      for (const auto& item : arg.as_array()) {
        regexes.emplace_back();
        if (!item.is<bson::regex>()) continue;
        auto re = compile_regex(item, here);
        if (!re) return re.error();
        regexes.back() = std::move(re).value();
      }
      return located_ptr(std::make_shared<all_predicate>(path, arg.as_array(), std::move(regexes)));
    }
    if (op == "$regex") {
      auto re = compile_regex(arg, here);
      if (!re) return re.error();
      return located_ptr(std::make_shared<regex_predicate>(path, std::move(re).value()));
    }
    if (op == "$options") return bad(here, "$options needs a $regex");
    if (op == in_with_regex || op == nin_with_regex) return in_regex(path, op, arg, here);
    if (is_unimplemented_field_operator(op)) return refuse_operator(here, op);
    if (op == "$size") {
      if (!arg.is_number() || arg.to_double() != std::floor(arg.to_double()) ||
          arg.to_double() < 0) {
        return bad(here, "$size needs a non-negative whole number");
      }
      return located_ptr(std::make_shared<size_predicate>(path, arg.to_double()));
    }
    if (op == "$type") return type(path, arg, here);
    if (op == "$elemMatch") return elem_match(path, arg, here);
    return located_ptr();
  }

 private:
  // A $regex argument after compile_query merged its $options into it (a BSON regex).
  static denormd::expected<query_regex, compile_error> compile_regex(const bson::value& arg,
                                                                     const std::string& here) {
    if (!arg.is<bson::regex>()) return bad(here, "$regex has to be a string");
    auto re = query_regex::compile(arg.as<bson::regex>());
    if (!re) return denormd::unexpected<compile_error>{{here, re.error().message, re.error().code}};
    return std::move(re).value();
  }

  static denormd::expected<located_ptr, compile_error> in_regex(const std::string& path,
                                                                const std::string& op,
                                                                const bson::value& arg,
                                                                const std::string& here) {
    const std::string shown = op == in_with_regex ? "$in" : "$nin";
    if (!arg.is_array()) return bad(here, shown + " needs an array");
    bson::array values;
    std::vector<query_regex> regexes;
    for (std::size_t i = 0; i < arg.as_array().size(); ++i) {
      const auto& item = arg.as_array()[i];
      const std::string item_ptr = denormd::pointer_join(here, std::to_string(i));
      if (query::is_operator_document(item)) return bad(item_ptr, "cannot nest $ under " + shown);
      if (!item.is<bson::regex>()) {
        values.push_back(item);
        continue;
      }
      auto re = compile_regex(item, item_ptr);
      if (!re) return re.error();
      regexes.push_back(std::move(re).value());
    }
    return located_ptr(std::make_shared<in_regex_predicate>(
        path, std::move(values), std::move(regexes), op == nin_with_regex));
  }

  denormd::expected<located_ptr, compile_error> type(const std::string& path,
                                                     const bson::value& arg,
                                                     const std::string& here) const {
    const bson::array items = arg.is_array() ? arg.as_array() : bson::array{arg};
    if (items.empty()) return bad(here, "$type must match at least one type");
    std::vector<int> codes;
    for (const auto& item : items) {
      const int code = type_code(item);
      if (code == 0) return bad(here, "unknown type name alias or code: " + describe(item));
      codes.push_back(code);
    }
    return located_ptr(std::make_shared<type_predicate>(path, std::move(codes)));
  }

  denormd::expected<located_ptr, compile_error> elem_match(const std::string& path,
                                                           const bson::value& arg,
                                                           const std::string& here) const {
    if (!arg.is_document()) return bad(here, "$elemMatch needs an Object");
    const auto& spec = arg.as_document();
    // {$elemMatch: {$gt: 1}} tests the elements themselves; {$elemMatch: {x: 1}} (or a
    // logical operator) tests documents in the array.
    const std::string first = spec.empty() ? "" : spec.fields().front().name;
    const bool value_form =
        query::is_operator_document(arg) && first != "$and" && first != "$or" && first != "$nor";
    auto sub = value_form ? query::matcher::compile(bson::document{{element_key, arg}}, *this)
                          : query::matcher::compile(spec, *this);
    if (!sub) {
      const std::size_t strip = value_form ? 1 + std::string_view(element_key).size() : 0;
      return denormd::unexpected<compile_error>{under(here, sub.error(), strip)};
    }
    return located_ptr(
        std::make_shared<elem_match_predicate>(path, value_form, std::move(sub).value()));
  }

  const bson::document* let_;
};

// ---- regexes: the filter as MongoDB parses it, in a form the matcher's hook can see ----
//
// The matcher takes `{path: value}` as equality and `$in` as equalities, before any extension
// is asked, and hands an extension one operator at a time. So compile_query rewrites what MongoDB
// parses as regex matches first (copying only the parts that change, and nothing when the filter
// has no regex): `{a: /x/}` becomes `{a: {$regex: /x/}}`, `$regex` with `$options` one
// `$regex: /x/opts` (checked as parseRegexDocument does), `$not: /x/` `$not: {$regex: /x/}`, and
// an `$in`/`$nin` list holding a regex the renamed operator above.

using rewrite_result = denormd::expected<std::optional<bson::value>, compile_error>;

rewrite_result unchanged() {
  return std::optional<bson::value>();
}

rewrite_result replaced(bson::value v) {
  return std::optional<bson::value>(std::move(v));
}

rewrite_result rewrite_filter(const bson::document& filter, const std::string& pointer);

// Applies `change` to each element of `items` (nullopt: unchanged), copying on the first change.
template <class Items, class Change>
denormd::expected<std::optional<Items>, compile_error> rewrite_each(const Items& items,
                                                                    Change change) {
  std::optional<Items> out;
  std::size_t i = 0;
  for (const auto& item : items) {
    auto changed = change(item, i);
    if (!changed) return denormd::unexpected<compile_error>{changed.error()};
    if (*changed && !out) {
      out.emplace();
      std::size_t j = 0;
      for (const auto& before : items) {
        if (j++ == i) break;
        if constexpr (std::is_same_v<Items, bson::document>) {
          out->append(before.name, before.val);
        } else {
          out->push_back(before);
        }
      }
    }
    if (out) {
      if constexpr (std::is_same_v<Items, bson::document>) {
        out->append(item.name, *changed ? std::move(**changed) : item.val);
      } else {
        out->push_back(*changed ? std::move(**changed) : item);
      }
    }
    ++i;
  }
  return out;
}

bool holds_regex(const bson::value& v) {
  return v.is_array() && std::any_of(v.as_array().begin(), v.as_array().end(),
                                     [](const bson::value& e) { return e.is<bson::regex>(); });
}

// parseRegexDocument: `$regex` (a string or a regex) and `$options` (a string), in field order.
denormd::expected<bson::regex, compile_error> merged_regex(const bson::document& ops,
                                                           const std::string& pointer) {
  // MongoDB has one code for each order the options can be given twice in.
  const auto twice = [](const std::string& here, int code) {
    return denormd::unexpected<compile_error>{
        compile_error{here, "options set in both $regex and $options", code}};
  };
  bson::regex out;
  for (const auto& f : ops) {
    const std::string here = denormd::pointer_join(pointer, f.name);
    if (f.name == "$regex") {
      if (f.val.is_string()) {
        out.pattern = f.val.as_string();
      } else if (f.val.is<bson::regex>()) {
        out.pattern = f.val.as<bson::regex>().pattern;
        if (!f.val.as<bson::regex>().options.empty()) {
          if (!out.options.empty()) return twice(here, 51074);
          out.options = f.val.as<bson::regex>().options;
        }
      } else {
        return bad(here, "$regex has to be a string");
      }
    } else if (f.name == "$options") {
      if (!f.val.is_string()) return bad(here, "$options has to be a string");
      if (!out.options.empty()) return twice(here, 51075);
      out.options = f.val.as_string();
    }
  }
  return out;
}

// The operators of one path, `{$op: arg, ...}`.
rewrite_result rewrite_operators(const bson::document& ops, const std::string& pointer) {
  std::optional<bson::regex> regex;
  if (ops.contains("$regex")) {
    auto merged = merged_regex(ops, pointer);
    if (!merged) return denormd::unexpected<compile_error>{merged.error()};
    regex = std::move(merged).value();
  } else if (ops.contains("$options")) {
    return bad(denormd::pointer_join(pointer, "$options"), "$options needs a $regex");
  }
  auto out = rewrite_each(ops, [&](const bson::field& f, std::size_t) -> rewrite_result {
    const std::string here = denormd::pointer_join(pointer, f.name);
    if (f.name == "$regex") {
      if (f.val.is<bson::regex>() && f.val.as<bson::regex>() == *regex) return unchanged();
      return replaced(bson::value(*regex));
    }
    if (f.name == "$ne" && f.val.is<bson::regex>())
      return bad(here, "Can't have regex as arg to $ne.");
    if (f.name == "$not") {
      if (f.val.is<bson::regex>()) return replaced(bson::value(bson::document{{"$regex", f.val}}));
      if (query::is_operator_document(f.val)) return rewrite_operators(f.val.as_document(), here);
      return unchanged();
    }
    if (f.name == "$elemMatch" && f.val.is_document()) {
      const auto& spec = f.val.as_document();
      const std::string first = spec.empty() ? "" : spec.fields().front().name;
      const bool value_form = query::is_operator_document(f.val) && first != "$and" &&
                              first != "$or" && first != "$nor";
      return value_form ? rewrite_operators(spec, here) : rewrite_filter(spec, here);
    }
    return unchanged();
  });
  if (!out) return denormd::unexpected<compile_error>{out.error()};
  // $options merged into $regex goes; an $in or $nin holding a regex is renamed.
  const bool reshaped = std::any_of(ops.begin(), ops.end(), [](const bson::field& f) {
    return f.name == "$options" || ((f.name == "$in" || f.name == "$nin") && holds_regex(f.val));
  });
  if (!reshaped) {
    if (!*out) return unchanged();
    return replaced(bson::value(std::move(**out)));
  }
  bson::document result;
  for (const auto& f : *out ? **out : ops) {
    if (f.name == "$options") continue;
    if ((f.name == "$in" || f.name == "$nin") && holds_regex(f.val)) {
      result.append(f.name == "$in" ? in_with_regex : nin_with_regex, f.val);
    } else {
      result.append(f.name, f.val);
    }
  }
  return replaced(bson::value(std::move(result)));
}

rewrite_result rewrite_filter(const bson::document& filter, const std::string& pointer) {
  auto out = rewrite_each(filter, [&](const bson::field& f, std::size_t) -> rewrite_result {
    const std::string here = denormd::pointer_join(pointer, f.name);
    if (f.name == "$and" || f.name == "$or" || f.name == "$nor") {
      if (!f.val.is_array()) return unchanged();
      auto items = rewrite_each(
          f.val.as_array(), [&](const bson::value& item, std::size_t i) -> rewrite_result {
            if (!item.is_document()) return unchanged();
            return rewrite_filter(item.as_document(),
                                  denormd::pointer_join(here, std::to_string(i)));
          });
      if (!items) return denormd::unexpected<compile_error>{items.error()};
      if (!*items) return unchanged();
      return replaced(bson::value(std::move(**items)));
    }
    if (f.name.starts_with('$')) return unchanged();  // $expr, $comment, ...
    if (f.val.is<bson::regex>()) return replaced(bson::value(bson::document{{"$regex", f.val}}));
    if (query::is_operator_document(f.val)) return rewrite_operators(f.val.as_document(), here);
    return unchanged();
  });
  if (!out) return denormd::unexpected<compile_error>{out.error()};
  if (!*out) return unchanged();
  return replaced(bson::value(std::move(**out)));
}

const test_server_operators& operators() {
  static const test_server_operators ops;
  return ops;
}

bool is_comparison(const std::string& op) {
  return op == "$eq" || op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte" || op == "$in";
}

// The positional index of `{path: spec}`: its first operator that went through an array.
std::optional<std::size_t> field_index(const std::string& path, const bson::value& spec,
                                       const bson::document& doc) {
  if (!query::is_operator_document(spec)) return comparison_hit(doc, path, "$eq", spec).index;
  for (const auto& f : spec.as_document()) {
    std::optional<std::size_t> index;
    if (is_comparison(f.name)) {
      index = comparison_hit(doc, path, f.name, f.val).index;
    } else if (auto p = operators().located(path, f.name, f.val, ""); p && *p) {
      index = (*p)->find(doc).index;
    }
    if (index) return index;
  }
  return std::nullopt;
}

// Walks the filter in order like the evaluation does: $and's items, the $or item that
// matched, and field predicates; negations ($not $ne $nin $nor) never locate an element.
std::optional<std::size_t> filter_index(const bson::document& filter, const bson::document& doc) {
  for (const auto& f : filter) {
    std::optional<std::size_t> index;
    if ((f.name == "$and" || f.name == "$or") && f.val.is_array()) {
      for (const auto& item : f.val.as_array()) {
        if (!item.is_document()) continue;
        const auto& sub = item.as_document();
        if (f.name == "$or") {
          auto m = compile_query(sub);
          if (!m || !m->matches(doc)) continue;
        }
        index = filter_index(sub, doc);
        if (index || f.name == "$or") break;
      }
    } else if (!f.name.starts_with('$')) {
      index = field_index(f.name, f.val, doc);
    }
    if (index) return index;
  }
  return std::nullopt;
}

}  // namespace

denormd::expected<query::matcher, compile_error> compile_query(const bson::document& filter,
                                                               const bson::document* let) {
  auto rewritten = rewrite_filter(filter, "");
  if (!rewritten) return denormd::unexpected<compile_error>{rewritten.error()};
  const bson::document& compiled = *rewritten ? (*rewritten)->as_document() : filter;
  if (let == nullptr) return query::matcher::compile(compiled, operators());
  const test_server_operators with_let(let);
  return query::matcher::compile(compiled, with_let);
}

std::optional<std::size_t> positional_index(const query::matcher& m, const bson::document& doc) {
  return filter_index(m.filter(), doc);
}

}  // namespace mongo_emulator::engine
