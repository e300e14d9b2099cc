// The aggregation expression operators the emulator implements, with MongoDB 6.0's semantics
// and error codes: comparison ($eq $ne $gt $gte $lt $lte $cmp), boolean ($and $or $not), $in,
// arrays ($size $map $filter $anyElementTrue $allElementsTrue $concatArrays $arrayElemAt
// $objectToArray), strings ($concat $substrCP $indexOfCP $split $strLenCP), $type, $getField,
// $ifNull, $cond, $switch, $let and $reduce; the helpers the other families share
// (expression_support.h). Errors at run time throw expression_error (see expression.h).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "expression_support.h"
#include "numeric.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::fail;

namespace ops {

void raise(std::string message, int code) {
  throw expression_error(std::move(message), code);
}

std::string type_of(const maybe_value& v) {
  return v ? std::string(bson::type_name(v->kind())) : "missing";
}

bool nullish(const maybe_value& v) {
  return !v || v->is_null() || v->is<bson::undefined_t>();
}

// A number that is a whole 32-bit value (MongoDB's coerceToInt after its integral check).
std::optional<std::int32_t> whole_int32(const bson::value& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.to_double();
  if (std::isnan(d) || d != std::floor(d) || d < std::numeric_limits<std::int32_t>::min() ||
      d > std::numeric_limits<std::int32_t>::max())
    return std::nullopt;
  return static_cast<std::int32_t>(d);
}

// Error codes of the arithmetic operators' type checks (ErrorCodes::TypeMismatch, Overflow and
// BadValue; 5.0+ replaced the old 16554/16555/16556/16609 with these).

numeric_width width_of(const bson::value& v) {
  if (v.is<std::int32_t>()) return numeric_width::int32;
  if (v.is<std::int64_t>()) return numeric_width::int64;
  if (v.is<double>()) return numeric_width::double_;
  return numeric_width::decimal;
}

// Value::coerceToLong: doubles truncate (saturating here, where C++ would be undefined).
std::int64_t coerce_to_long(const bson::value& v) {
  if (v.is<std::int32_t>()) return v.as<std::int32_t>();
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  if (v.is<bson::decimal128>()) return decimal_to_int64(v.as<bson::decimal128>());
  const double d = v.to_double();
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return std::numeric_limits<std::int64_t>::max();
  if (d < -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(d);
}

// Value::createIntOrLong.
bson::value int_or_long(std::int64_t r) {
  if (r >= std::numeric_limits<std::int32_t>::min() &&
      r <= std::numeric_limits<std::int32_t>::max())
    return bson::value(static_cast<std::int32_t>(r));
  return bson::value(r);
}

std::string double_g(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

denormd::status add_item(const bson::value& spec, parse_scope& scope, node& n) {
  auto e = parse_expression(spec, scope);
  if (!e) return e.error();
  n.items.push_back(std::move(e).value());
  return {};
}

denormd::status parse_list(const op_spec& op, const bson::value& arg, parse_scope& scope, node& n) {
  const bson::array args = arg.is_array() ? arg.as_array() : bson::array{arg};
  const std::string name(op.name);
  const std::string given = std::to_string(args.size());
  if (op.min_args == op.max_args && args.size() != op.min_args) {
    return fail("Expression " + name + " takes exactly " + std::to_string(op.min_args) +
                    " arguments. " + given + " were passed in.",
                16020);
  }
  if (op.max_args == any && args.size() < op.min_args) {
    // The only variadic operator with a minimum ($ifNull) has its own check.
    return fail(name + " needs at least two arguments, had: " + given, 1257300);
  }
  if (args.size() < op.min_args || args.size() > op.max_args) {
    return fail("Expression " + name + " takes at least " + std::to_string(op.min_args) +
                    " arguments, and at most " + std::to_string(op.max_args) + ", but " + given +
                    " were passed in.",
                28667);
  }
  for (const auto& a : args) {
    if (auto s = add_item(a, scope, n); !s) return s;
  }
  return {};
}

denormd::expected<std::vector<const bson::value*>> named_args(const op_spec& op,
                                                              const bson::value& arg,
                                                              const named_spec& spec) {
  const std::string name(op.name);
  if (!arg.is_document())
    return fail(name + " only supports an object as its argument", spec.unknown_code);
  std::vector<const bson::value*> out(spec.names.size(), nullptr);
  for (const auto& f : arg.as_document()) {
    bool known = false;
    for (std::size_t i = 0; i < spec.names.size() && !known; ++i) {
      if (f.name != spec.names[i]) continue;
      out[i] = &f.val;
      known = true;
    }
    if (!known) return fail("Unrecognized parameter to " + name + ": " + f.name, spec.unknown_code);
  }
  for (std::size_t i = 0; i < spec.names.size(); ++i) {
    if (out[i] == nullptr && spec.missing_codes[i] != 0) {
      return fail("Missing '" + std::string(spec.names[i]) + "' parameter to " + name,
                  spec.missing_codes[i]);
    }
  }
  return out;
}

denormd::status parse_named_items(const op_spec& op, const bson::value& arg, const named_spec& spec,
                                  parse_scope& scope, node& n) {
  auto args = named_args(op, arg, spec);
  if (!args) return args.error();
  for (const bson::value* a : *args) {
    if (a == nullptr) {
      n.items.emplace_back();
    } else if (auto s = add_item(*a, scope, n); !s) {
      return s;
    }
  }
  return {};
}

}  // namespace ops

using namespace ops;

namespace {

// Value::compare: missing ranks below every value (MongoDB ranks it with undefined, below null).
int compare_values(const maybe_value& a, const maybe_value& b) {
  if (!a || !b) return (a ? 1 : 0) - (b ? 1 : 0);
  return bson::compare(*a, *b);
}

int compare_args(const node& n, evaluation& ev) {
  return compare_values(arg(n, 0, ev), arg(n, 1, ev));
}

// UTF-8: a byte that starts a code point.
bool starts_code_point(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
}

// The byte offset of code point `index` in `s` (s.size() when past the end).
std::size_t code_point_offset(const std::string& s, std::size_t index) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!starts_code_point(s[i])) continue;
    if (seen == index) return i;
    ++seen;
  }
  return s.size();
}

std::size_t code_points(const std::string& s, std::size_t from = 0,
                        std::size_t to = std::string::npos) {
  std::size_t n = 0;
  for (std::size_t i = from; i < std::min(to, s.size()); ++i)
    n += starts_code_point(s[i]) ? 1 : 0;
  return n;
}

// ---- evaluators ----

maybe_value eval_and(const node& n, evaluation& ev) {
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    if (!truthy(arg(n, i, ev))) return bson::value(false);
  }
  return bson::value(true);
}

maybe_value eval_or(const node& n, evaluation& ev) {
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    if (truthy(arg(n, i, ev))) return bson::value(true);
  }
  return bson::value(false);
}

maybe_value eval_in(const node& n, evaluation& ev) {
  const maybe_value needle = arg(n, 0, ev);
  const maybe_value list = arg(n, 1, ev);
  if (!list || !list->is_array())
    raise("$in requires an array as a second argument, found: " + type_of(list), 40081);
  for (const auto& item : list->as_array()) {
    if (compare_values(needle, item) == 0) return bson::value(true);
  }
  return bson::value(false);
}

maybe_value eval_object_to_array(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  if (nullish(v)) return bson::value{};
  if (!v->is_document())
    raise("$objectToArray requires a document input, found: " + type_of(v), 40390);
  bson::array out;
  for (const auto& f : v->as_document())
    out.emplace_back(bson::document{{"k", f.name}, {"v", f.val}});
  return bson::value(std::move(out));
}

maybe_value eval_size(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  if (!v || !v->is_array())
    raise("The argument to $size must be an array. Type of argument: " + type_of(v), 17124);
  return bson::value(static_cast<std::int32_t>(v->as_array().size()));
}

template <bool All>
maybe_value eval_elements_true(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  if (!v || !v->is_array()) {
    raise(std::string(All ? "$allElementsTrue" : "$anyElementTrue") +
              "'s argument must be an array, but is " + type_of(v),
          All ? 17040 : 17041);
  }
  for (const auto& item : v->as_array()) {
    if (truthy(item) != All) return bson::value(!All);
  }
  return bson::value(All);
}

maybe_value eval_if_null(const node& n, evaluation& ev) {
  for (std::size_t i = 0; i + 1 < n.items.size(); ++i) {
    maybe_value v = arg(n, i, ev);
    if (!nullish(v)) return v;
  }
  return arg(n, n.items.size() - 1, ev);
}

maybe_value eval_cond(const node& n, evaluation& ev) {
  return truthy(arg(n, 0, ev)) ? arg(n, 1, ev) : arg(n, 2, ev);
}

maybe_value eval_concat(const node& n, evaluation& ev) {
  std::string out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const maybe_value v = arg(n, i, ev);
    if (nullish(v)) return bson::value{};
    if (!v->is_string()) raise("$concat only supports strings, not " + type_of(v), 16702);
    out += v->as_string();
  }
  return bson::value(std::move(out));
}

maybe_value eval_substr_cp(const node& n, evaluation& ev) {
  const maybe_value s = arg(n, 0, ev);
  const maybe_value start = arg(n, 1, ev);
  const maybe_value length = arg(n, 2, ev);
  const std::string text = coerce_to_string(s);  // numbers and dates as text; null as ""
  if (!start || !start->is_number()) {
    raise("$substrCP: starting index must be a numeric type (is BSON type " + type_of(start) + ")",
          34450);
  }
  if (!length || !length->is_number())
    raise("$substrCP: length must be a numeric type (is BSON type " + type_of(length) + ")", 34452);
  const auto from = whole_int32(*start);
  if (!from)
    raise("$substrCP: starting index cannot be represented as a 32-bit integral value", 34451);
  const auto count = whole_int32(*length);
  if (!count) raise("$substrCP: length cannot be represented as a 32-bit integral value", 34453);
  if (*count < 0) raise("$substrCP: length must be a nonnegative integer.", 34454);
  if (*from < 0) raise("$substrCP: the starting index must be nonnegative integer.", 34455);
  const std::size_t begin = code_point_offset(text, static_cast<std::size_t>(*from));
  std::size_t end = begin;
  for (std::int32_t taken = 0; end < text.size() && taken < *count; ++taken) {
    ++end;
    while (end < text.size() && !starts_code_point(text[end]))
      ++end;
  }
  return bson::value(text.substr(begin, end - begin));
}

// $indexOfCP's optional start and end: whole, nonnegative numbers.
std::size_t index_bound(const maybe_value& v, const char* which) {
  const auto whole = v ? whole_int32(*v) : std::nullopt;
  if (!whole) {
    raise(std::string("$indexOfCP requires an integral ") + which +
              " index, found a value of type: " + type_of(v) +
              ", with value: " + (v ? value_text(*v) : std::string("missing")),
          40096);
  }
  if (*whole < 0) {
    raise(std::string("$indexOfCP requires a nonnegative ") + which +
              " index, found: " + std::to_string(*whole),
          40097);
  }
  return static_cast<std::size_t>(*whole);
}

maybe_value eval_index_of_cp(const node& n, evaluation& ev) {
  const maybe_value s = arg(n, 0, ev);
  if (nullish(s)) return bson::value{};
  if (!s->is_string())
    raise("$indexOfCP requires a string as the first argument, found: " + type_of(s), 40093);
  const maybe_value token = arg(n, 1, ev);
  if (!token || !token->is_string())
    raise("$indexOfCP requires a string as the second argument, found: " + type_of(token), 40094);
  const std::string& text = s->as_string();
  const std::size_t length = code_points(text);
  std::size_t first = 0;
  std::size_t last = length;
  if (n.items.size() > 2) first = index_bound(arg(n, 2, ev), "starting");
  if (n.items.size() > 3) last = std::min(length, index_bound(arg(n, 3, ev), "ending"));
  if (first > length || first > last) return bson::value(std::int32_t{-1});
  const std::size_t begin = code_point_offset(text, first);
  const std::size_t end = code_point_offset(text, last);
  const std::string& needle = token->as_string();
  for (std::size_t at = begin; at + needle.size() <= end; ++at) {
    if (!starts_code_point(text[at]) && at < text.size()) continue;
    if (text.compare(at, needle.size(), needle) == 0)
      return bson::value(static_cast<std::int32_t>(first + code_points(text, begin, at)));
  }
  return bson::value(std::int32_t{-1});
}

maybe_value eval_split(const node& n, evaluation& ev) {
  const maybe_value s = arg(n, 0, ev);
  const maybe_value separator = arg(n, 1, ev);
  if (nullish(s) || nullish(separator)) return bson::value{};
  if (!s->is_string()) {
    raise("$split requires an expression that evaluates to a string as a first argument, found: " +
              type_of(s),
          40085);
  }
  if (!separator->is_string()) {
    raise("$split requires an expression that evaluates to a string as a second argument, found: " +
              type_of(separator),
          40086);
  }
  const std::string& text = s->as_string();
  const std::string& sep = separator->as_string();
  if (sep.empty()) raise("$split requires a non-empty separator", 40087);
  bson::array out;
  std::size_t from = 0;
  for (auto at = text.find(sep); at != std::string::npos; at = text.find(sep, from)) {
    out.emplace_back(text.substr(from, at - from));
    from = at + sep.size();
  }
  out.emplace_back(text.substr(from));
  return bson::value(std::move(out));
}

maybe_value eval_str_len_cp(const node& n, evaluation& ev) {
  const maybe_value s = arg(n, 0, ev);
  if (!s || !s->is_string())
    raise("$strLenCP requires a string argument, found: " + type_of(s), 34471);
  return bson::value(static_cast<std::int32_t>(code_points(s->as_string())));
}

maybe_value eval_type(const node& n, evaluation& ev) {
  return bson::value(type_of(arg(n, 0, ev)));
}

maybe_value eval_concat_arrays(const node& n, evaluation& ev) {
  bson::array out;
  for (std::size_t i = 0; i < n.items.size(); ++i) {
    const maybe_value v = arg(n, i, ev);
    if (nullish(v)) return bson::value{};
    if (!v->is_array()) raise("$concatArrays only supports arrays, not " + type_of(v), 28664);
    for (const auto& item : v->as_array())
      out.push_back(item);
  }
  return bson::value(std::move(out));
}

maybe_value eval_array_elem_at(const node& n, evaluation& ev) {
  const maybe_value list = arg(n, 0, ev);
  const maybe_value index = arg(n, 1, ev);
  if (nullish(list) || nullish(index)) return bson::value{};
  if (!list->is_array())
    raise("$arrayElemAt's first argument must be an array, but is " + type_of(list), 28689);
  if (!index->is_number())
    raise("$arrayElemAt's second argument must be a numeric value, but is " + type_of(index),
          28690);
  const auto i = whole_int32(*index);
  if (!i) {
    raise("$arrayElemAt's second argument must be representable as a 32-bit integer: " +
              value_text(*index),
          28691);
  }
  const auto& items = list->as_array();
  const auto size = static_cast<std::int64_t>(items.size());
  const std::int64_t at = *i < 0 ? size + *i : *i;
  if (at < 0 || at >= size) return std::nullopt;
  return items[static_cast<std::size_t>(at)];
}

// $switch: items are (case, then) pairs and last the default (empty when not given).
maybe_value eval_switch(const node& n, evaluation& ev) {
  const std::size_t branches = (n.items.size() - 1) / 2;
  for (std::size_t b = 0; b < branches; ++b) {
    if (truthy(arg(n, 2 * b, ev))) return arg(n, 2 * b + 1, ev);
  }
  if (n.items.back().tree() == nullptr) {
    raise("$switch could not find a matching branch for an input, and no default was specified.",
          40066);
  }
  return arg(n, n.items.size() - 1, ev);
}

maybe_value eval_get_field(const node& n, evaluation& ev) {
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  if (!input->is_document())
    raise("$getField requires 'input' to evaluate to type Object, but got " + type_of(input),
          3041705);
  const bson::value* v = input->as_document().get(n.name);
  if (v == nullptr) return std::nullopt;
  return *v;
}

// Evaluates item `body` once per element of item 0's array, with the element bound to
// n.bound[0]; `each` sees the element and the body's value and returns false to stop.
template <class Each>
void for_each_element(const node& n, const bson::array& items, std::size_t body, evaluation& ev,
                      Each&& each) {
  ev.bound.emplace_back(n.bound[0], std::nullopt);
  const std::size_t slot = ev.bound.size() - 1;
  for (const auto& item : items) {
    ev.bound[slot].second = item;
    const maybe_value v = arg(n, body, ev);
    if (!each(item, v)) break;
  }
  ev.bound.pop_back();
}

maybe_value eval_map(const node& n, evaluation& ev) {
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  if (!input->is_array()) raise("input to $map must be an array not " + type_of(input), 16883);
  bson::array out;
  for_each_element(n, input->as_array(), 1, ev, [&](const bson::value&, const maybe_value& v) {
    out.push_back(v.value_or(bson::value{}));
    return true;
  });
  return bson::value(std::move(out));
}

maybe_value eval_filter(const node& n, evaluation& ev) {
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  if (!input->is_array()) raise("input to $filter must be an array not " + type_of(input), 28651);
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  if (n.items[2].tree() != nullptr) {
    const maybe_value l = arg(n, 2, ev);
    if (!nullish(l)) {
      const auto whole = whole_int32(*l);
      if (!whole) {
        raise("$filter: limit must be represented as a 32-bit integral value: " + value_text(*l),
              327391);
      }
      if (*whole < 1)
        raise("$filter: limit must be greater than 0: " + std::to_string(*whole), 327392);
      limit = static_cast<std::size_t>(*whole);
    }
  }
  bson::array out;
  for_each_element(n, input->as_array(), 1, ev, [&](const bson::value& item, const maybe_value& v) {
    if (truthy(v)) out.push_back(item);
    return out.size() < limit;
  });
  return bson::value(std::move(out));
}

// $reduce: items [input, initialValue, in]; `in` sees $$this (the element) and $$value (the
// value so far, missing while it is missing).
maybe_value eval_reduce(const node& n, evaluation& ev) {
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  if (!input->is_array())
    raise("$reduce requires that 'input' be an array, found: " + value_text(*input), 40080);
  maybe_value value = arg(n, 1, ev);
  ev.bound.emplace_back("this", std::nullopt);
  ev.bound.emplace_back("value", std::nullopt);
  const std::size_t slot = ev.bound.size() - 2;
  for (const auto& item : input->as_array()) {
    ev.bound[slot].second = item;
    ev.bound[slot + 1].second = std::move(value);
    value = arg(n, 2, ev);
  }
  ev.bound.resize(slot);
  return value;
}

maybe_value eval_let(const node& n, evaluation& ev) {
  // Every variable is evaluated in the outer scope, then all are bound for `in`.
  std::vector<maybe_value> values;
  for (std::size_t i = 0; i < n.bound.size(); ++i)
    values.push_back(arg(n, i, ev));
  for (std::size_t i = 0; i < n.bound.size(); ++i)
    ev.bound.emplace_back(n.bound[i], std::move(values[i]));
  maybe_value out = arg(n, n.bound.size(), ev);
  ev.bound.resize(ev.bound.size() - n.bound.size());
  return out;
}

// ---- parsers ----

denormd::status parse_cond(const op_spec& op, const bson::value& arg, parse_scope& scope, node& n) {
  if (!arg.is_document()) return parse_list(op, arg, scope, n);
  auto args = named_args(op, arg, {{"if", "then", "else"}, {17080, 17081, 17082}, 17083});
  if (!args) return args.error();
  for (const auto* a : *args) {
    if (auto s = add_item(*a, scope, n); !s) return s;
  }
  return {};
}

// {$switch: {branches: [{case, then}, ...], default}}, with ExpressionSwitch::parse's checks in
// its order, and the one its optimize() adds: no default and every case a constant false (40069).
denormd::status parse_switch(const op_spec&, const bson::value& arg, parse_scope& scope, node& n) {
  const auto kind = [](const bson::value& v) { return std::string(bson::type_name(v.kind())); };
  if (!arg.is_document())
    return fail("$switch requires an object as an argument, found: " + kind(arg), 40060);
  expression fallback;
  for (const auto& f : arg.as_document()) {
    if (f.name == "branches") {
      if (!f.val.is_array())
        return fail("$switch expected an array for 'branches', found: " + kind(f.val), 40061);
      for (const auto& branch : f.val.as_array()) {
        if (!branch.is_document()) {
          return fail("$switch expected each branch to be an object, found: " + kind(branch),
                      40062);
        }
        const bson::value* when = nullptr;
        const bson::value* then = nullptr;
        for (const auto& part : branch.as_document()) {
          if (part.name == "case") {
            when = &part.val;
          } else if (part.name == "then") {
            then = &part.val;
          } else {
            return fail("$switch found an unknown argument to a branch: " + part.name, 40063);
          }
        }
        if (when == nullptr)
          return fail("$switch requires each branch have a 'case' expression", 40064);
        if (then == nullptr)
          return fail("$switch requires each branch have a 'then' expression.", 40065);
        if (auto s = add_item(*when, scope, n); !s) return s;
        if (auto s = add_item(*then, scope, n); !s) return s;
      }
    } else if (f.name == "default") {
      auto e = parse_expression(f.val, scope);
      if (!e) return e.error();
      fallback = std::move(e).value();
    } else {
      return fail("$switch found an unknown argument: " + f.name, 40067);
    }
  }
  if (n.items.empty()) return fail("$switch requires at least one branch.", 40068);
  bool all_false = fallback.tree() == nullptr;
  for (std::size_t i = 0; all_false && i < n.items.size(); i += 2) {
    const node* c = n.items[i].tree();
    all_false = c != nullptr && c->k == node::kind::constant && !truthy(c->constant);
  }
  if (all_false) {
    return fail(
        "One cannot execute a switch statement where all the cases evaluate to false without a "
        "default.",
        40069);
  }
  n.items.push_back(std::move(fallback));
  return {};
}

// The variable an operator binds: `as` (default "this"), checked like any user variable.
denormd::expected<std::string> bound_name(const bson::value* as) {
  if (as == nullptr) return std::string("this");
  if (!as->is_string()) return fail("'as' must be a string", 16866);
  if (auto s = check_variable_name(as->as_string()); !s) return s.error();
  return as->as_string();
}

// $map {input, as, in} and $filter {input, as, cond, limit}: items [input, body, limit?].
denormd::status parse_iteration(const op_spec& op, const bson::value& arg, parse_scope& scope,
                                node& n) {
  const bool is_map = op.name == "$map";
  const named_spec spec =
      is_map ? named_spec{{"input", "as", "in"}, {16880, 0, 16882}, 16879}
             : named_spec{{"input", "as", "cond", "limit"}, {28646, 0, 28648, 0}, 28647};
  auto args = named_args(op, arg, spec);
  if (!args) return args.error();
  auto as = bound_name((*args)[1]);
  if (!as) return as.error();
  if (auto s = add_item(*(*args)[0], scope, n); !s) return s;
  scope.bound.push_back(*as);
  auto body = add_item(*(*args)[2], scope, n);
  scope.bound.pop_back();
  if (!body) return body;
  n.bound.push_back(*as);
  if (!is_map) {
    if ((*args)[3] == nullptr) {
      n.items.emplace_back();
    } else if (auto s = add_item(*(*args)[3], scope, n); !s) {
      return s;
    }
  }
  return {};
}

// {$reduce: {input, initialValue, in}}, ExpressionReduce::parse's checks.
denormd::status parse_reduce(const op_spec&, const bson::value& arg, parse_scope& scope, node& n) {
  if (!arg.is_document()) {
    return fail("$reduce requires an object as an argument, found: " +
                    std::string(bson::type_name(arg.kind())),
                40075);
  }
  const bson::value* parts[3] = {nullptr, nullptr, nullptr};
  static constexpr std::string_view names[3] = {"input", "initialValue", "in"};
  for (const auto& f : arg.as_document()) {
    const auto* it = std::find(std::begin(names), std::end(names), f.name);
    if (it == std::end(names)) return fail("$reduce found an unknown argument: " + f.name, 40076);
    parts[it - std::begin(names)] = &f.val;
  }
  for (std::size_t i = 0; i < 3; ++i) {
    if (parts[i] == nullptr) {
      return fail("$reduce requires '" + std::string(names[i]) + "' to be specified",
                  40077 + static_cast<int>(i));
    }
  }
  if (auto s = add_item(*parts[0], scope, n); !s) return s;
  if (auto s = add_item(*parts[1], scope, n); !s) return s;
  scope.bound.push_back("this");
  scope.bound.push_back("value");
  auto body = add_item(*parts[2], scope, n);
  scope.bound.resize(scope.bound.size() - 2);
  return body;
}

denormd::status parse_let(const op_spec& op, const bson::value& arg, parse_scope& scope, node& n) {
  auto args = named_args(op, arg, {{"vars", "in"}, {16876, 16877}, 16875});
  if (!args) return args.error();
  const bson::value& vars = *(*args)[0];
  if (!vars.is_document()) return fail("invalid parameter: expected an object (vars)", 10065);
  for (const auto& f : vars.as_document()) {
    if (auto s = check_variable_name(f.name); !s) return s;
    if (auto s = add_item(f.val, scope, n); !s) return s;
    n.bound.push_back(f.name);
  }
  const std::size_t before = scope.bound.size();
  scope.bound.insert(scope.bound.end(), n.bound.begin(), n.bound.end());
  auto body = add_item(*(*args)[1], scope, n);
  scope.bound.resize(before);
  return body;
}

// {$getField: "name"} (from $$CURRENT) or {$getField: {field, input}}; `field` is constant.
denormd::status parse_get_field(const op_spec& op, const bson::value& arg, parse_scope& scope,
                                node& n) {
  const bson::value* field = &arg;
  const bson::value current("$$CURRENT");
  const bson::value* input = &current;
  const bool shorthand =
      !arg.is_document() ||
      (!arg.as_document().empty() && arg.as_document().fields().front().name.starts_with('$'));
  if (!shorthand) {
    auto args = named_args(op, arg, {{"field", "input"}, {3041702, 3041703}, 3041701});
    if (!args) return args.error();
    field = (*args)[0];
    input = (*args)[1];
  }
  auto name = parse_expression(*field, scope);
  if (!name) return name.error();
  const node* t = name->tree();
  if (t == nullptr || t->k != node::kind::constant) {
    return fail(
        "$getField requires 'field' to evaluate to a constant, but got a non-constant argument",
        5654601);
  }
  if (!t->constant.is_string()) {
    return fail("$getField requires 'field' to evaluate to type String, but got " +
                    std::string(bson::type_name(t->constant.kind())),
                5654602);
  }
  n.name = t->constant.as_string();
  return add_item(*input, scope, n);
}

// Comparisons as captureless lambdas: one line each in the table.
template <bool (*Test)(int)>
maybe_value eval_compare(const node& n, evaluation& ev) {
  return bson::value(Test(compare_args(n, ev)));
}
bool is_eq(int c) {
  return c == 0;
}
bool is_ne(int c) {
  return c != 0;
}
bool is_gt(int c) {
  return c > 0;
}
bool is_gte(int c) {
  return c >= 0;
}
bool is_lt(int c) {
  return c < 0;
}
bool is_lte(int c) {
  return c <= 0;
}

maybe_value eval_cmp(const node& n, evaluation& ev) {
  const int c = compare_args(n, ev);
  return bson::value(std::int32_t{c < 0 ? -1 : (c > 0 ? 1 : 0)});
}

maybe_value eval_not(const node& n, evaluation& ev) {
  return bson::value(!truthy(arg(n, 0, ev)));
}

const op_spec operators[] = {
    {"$eq", parse_list, eval_compare<is_eq>, 2, 2},
    {"$ne", parse_list, eval_compare<is_ne>, 2, 2},
    {"$gt", parse_list, eval_compare<is_gt>, 2, 2},
    {"$gte", parse_list, eval_compare<is_gte>, 2, 2},
    {"$lt", parse_list, eval_compare<is_lt>, 2, 2},
    {"$lte", parse_list, eval_compare<is_lte>, 2, 2},
    {"$cmp", parse_list, eval_cmp, 2, 2},
    {"$and", parse_list, eval_and, 0, any},
    {"$or", parse_list, eval_or, 0, any},
    {"$not", parse_list, eval_not, 1, 1},
    {"$in", parse_list, eval_in, 2, 2},
    {"$objectToArray", parse_list, eval_object_to_array, 1, 1},
    {"$size", parse_list, eval_size, 1, 1},
    {"$anyElementTrue", parse_list, eval_elements_true<false>, 1, 1},
    {"$allElementsTrue", parse_list, eval_elements_true<true>, 1, 1},
    {"$concatArrays", parse_list, eval_concat_arrays, 0, any},
    {"$arrayElemAt", parse_list, eval_array_elem_at, 2, 2},
    {"$ifNull", parse_list, eval_if_null, 2, any},
    {"$cond", parse_cond, eval_cond, 3, 3},
    {"$switch", parse_switch, eval_switch},
    {"$concat", parse_list, eval_concat, 0, any},
    {"$substrCP", parse_list, eval_substr_cp, 3, 3},
    {"$indexOfCP", parse_list, eval_index_of_cp, 2, 4},
    {"$split", parse_list, eval_split, 2, 2},
    {"$strLenCP", parse_list, eval_str_len_cp, 1, 1},
    {"$type", parse_list, eval_type, 1, 1},
    {"$getField", parse_get_field, eval_get_field},
    {"$map", parse_iteration, eval_map},
    {"$filter", parse_iteration, eval_filter},
    {"$let", parse_let, eval_let},
    {"$reduce", parse_reduce, eval_reduce},
};

}  // namespace

denormd::status parse_operator(const std::string& name, const bson::value& arg, parse_scope& scope,
                               expression::node& n) {
  const std::span<const op_spec> tables[] = {operators,          math_operators(),
                                             string_operators(), convert_operators(),
                                             date_operators(),   hash_operators()};
  for (const auto& table : tables) {
    for (const auto& op : table) {
      if (op.name != name) continue;
      n.name = name;
      n.eval = op.eval;
      return op.parse(op, arg, scope, n);
    }
  }
  // Not implemented here (MongoDB 6.0 knows more, e.g. $rand, $function, $dateAdd): the parse
  // error MongoDB gives an unknown name.
  return fail("Unrecognized expression '" + name + "'", 168);
}

}  // namespace mongo_emulator::engine
