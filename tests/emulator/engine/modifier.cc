#include "modifier.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "field_path.h"
#include "numeric.h"
#include "query_operators.h"
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

bool equal(const bson::value& a, const bson::value& b) {
  return bson::compare(a, b) == 0;
}

// BSONElement::binaryEqualValues: same types and bytes, so NaN equals NaN and 0.0 differs
// from -0.0 (unlike value::operator==, which compares doubles as numbers).
bool binary_equal(const bson::value& a, const bson::value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is<double>()) {
    const double x = a.as<double>();
    const double y = b.as<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  if (a.is_document()) {
    const auto& x = a.as_document().fields();
    const auto& y = b.as_document().fields();
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(),
                                              [](const bson::field& f, const bson::field& g) {
                                                return f.name == g.name &&
                                                       binary_equal(f.val, g.val);
                                              });
  }
  if (a.is_array()) {
    const auto& x = a.as_array();
    const auto& y = b.as_array();
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), binary_equal);
  }
  return a == b;
}

// MatchExpressionParser::parseIntegerElementToLong, with its FailedToParse messages.
expected<std::int64_t> parse_integer(const std::string& field, const bson::value& v) {
  if (!v.is_number())
    return fail("Expected a number in: " + element_text(field, v), failed_to_parse);
  if (v.is<std::int32_t>()) return static_cast<std::int64_t>(v.as<std::int32_t>());
  if (v.is<std::int64_t>()) return v.as<std::int64_t>();
  const double d = v.to_double();
  if (std::isnan(d)) {
    return fail("Expected an integer, but found NaN in: " + element_text(field, v),
                failed_to_parse);
  }
  if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
    return fail("Cannot represent as a 64-bit integer: " + element_text(field, v), failed_to_parse);
  }
  if (d != static_cast<double>(static_cast<std::int64_t>(d))) {
    return fail("Expected an integer: " + element_text(field, v), failed_to_parse);
  }
  return static_cast<std::int64_t>(d);
}

// pattern_cmp::checkSortClause.
denormd::status check_sort_pattern(const bson::document& pattern) {
  if (pattern.empty()) {
    return fail("The $sort pattern is empty when it should be a set of fields.", bad_value);
  }
  for (const auto& f : pattern) {
    const double order = f.val.is_number() ? f.val.to_double() : 0;
    if (order != 1 && order != -1) {
      return fail("The $sort element value must be either 1 or -1", bad_value);
    }
    const auto parts = split_path(f.name);
    if (parts.empty()) return fail("The $sort field cannot be empty", bad_value);
    for (const auto& part : parts) {
      if (part.empty()) {
        return fail("The $sort field is a dotted field but has an empty part: " + f.name,
                    bad_value);
      }
    }
  }
  return {};
}

// The value at a dotted path for $sort's key extraction: documents by name, arrays by index.
const bson::value* sort_key_at(const bson::value& v, const std::vector<std::string>& parts) {
  const bson::value* current = &v;
  for (const auto& part : parts) {
    if (current->is_document()) {
      current = current->as_document().get(part);
    } else if (current->is_array()) {
      const auto index = update_index(part);
      if (!index || *index >= current->as_array().size()) return nullptr;
      current = &current->as_array()[*index];
    } else {
      return nullptr;
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

bool is_path_accepting_operator(std::string_view name) {
  static constexpr std::array<std::string_view, 27> names = {
      "$eq",           "$ne",         "$gt",         "$gte",          "$lt",
      "$lte",          "$in",         "$nin",        "$all",          "$exists",
      "$mod",          "$type",       "$regex",      "$options",      "$elemMatch",
      "$size",         "$not",        "$geoWithin",  "$within",       "$geoIntersects",
      "$near",         "$nearSphere", "$bitsAllSet", "$bitsAllClear", "$bitsAnySet",
      "$bitsAnyClear", "$jsonSchema"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The field name $pull's wrapped matcher puts an element under (MongoDB uses "").
constexpr std::string_view pull_wrap_field = "pulled";

expected<query::matcher> compile_pull(const bson::document& filter) {
  auto m = compile_query(filter);
  if (!m) return fail(m.error().message, m.error().code);
  return std::move(m).value();
}

}  // namespace

std::optional<op_kind> op_kind_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, op_kind> table[] = {
      {"$set", op_kind::set},
      {"$setOnInsert", op_kind::set_on_insert},
      {"$unset", op_kind::unset},
      {"$inc", op_kind::inc},
      {"$mul", op_kind::mul},
      {"$min", op_kind::min},
      {"$max", op_kind::max},
      {"$currentDate", op_kind::current_date},
      {"$bit", op_kind::bit},
      {"$push", op_kind::push},
      {"$addToSet", op_kind::add_to_set},
      {"$pull", op_kind::pull},
      {"$pullAll", op_kind::pull_all},
      {"$pop", op_kind::pop},
      {"$rename", op_kind::rename}};
  for (const auto& [n, k] : table) {
    if (n == name) return k;
  }
  return std::nullopt;
}

expected<modifier> modifier::parse(op_kind op, const std::string& field, const bson::value& arg) {
  modifier m;
  m.kind_ = op;
  m.arg_ = arg;
  switch (op) {
    case op_kind::set:
    case op_kind::set_on_insert:
    case op_kind::unset:
    case op_kind::min:
    case op_kind::max:
    case op_kind::conflict_placeholder:
      return m;
    case op_kind::inc:
    case op_kind::mul:
      if (!arg.is_number()) {
        return fail(std::string("Cannot ") + (op == op_kind::inc ? "increment" : "multiply") +
                        " with non-numeric argument: {" + element_text(field, arg) + "}",
                    type_mismatch);
      }
      return m;
    case op_kind::current_date: {
      if (arg.is<bool>()) return m;
      if (!arg.is_document()) {
        return fail(type_of(arg) +
                        " is not valid type for $currentDate. Please use a boolean ('true') or a "
                        "$type expression ({$type: 'timestamp/date'}).",
                    bad_value);
      }
      bool found = false;
      for (const auto& f : arg.as_document()) {
        if (f.name != "$type") {
          return fail("Unrecognized $currentDate option: " + f.name, bad_value);
        }
        if (f.val.is_string() &&
            (f.val.as_string() == "date" || f.val.as_string() == "timestamp")) {
          m.date_ = f.val.as_string() == "date";
          found = true;
        }
      }
      if (!found) {
        return fail(
            "The '$type' string field is required to be 'date' or 'timestamp': "
            "{$currentDate: {field : {$type: 'date'}}}",
            bad_value);
      }
      return m;
    }
    case op_kind::bit: {
      if (!arg.is_document()) {
        return fail("The $bit modifier is not compatible with a " + type_of(arg) +
                        ". You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}",
                    bad_value);
      }
      for (const auto& f : arg.as_document()) {
        int code = 0;
        if (f.name == "and") {
          code = 0;
        } else if (f.name == "or") {
          code = 1;
        } else if (f.name == "xor") {
          code = 2;
        } else {
          return fail("The $bit modifier only supports 'and', 'or', and 'xor', not '" + f.name +
                          "' which is an unknown operator: {" + element_text(f.name, f.val) + "}",
                      bad_value);
        }
        if (!f.val.is<std::int32_t>() && !f.val.is<std::int64_t>()) {
          return fail("The $bit modifier field must be an Integer(32/64 bit); a '" +
                          type_of(f.val) + "' is not supported here: {" +
                          element_text(f.name, f.val) + "}",
                      bad_value);
        }
        m.bit_ops_.emplace_back(code, f.val);
      }
      return m;
    }
    case op_kind::push: {
      if (!arg.is_document() || !arg.as_document().contains("$each")) {
        m.values_.push_back(arg);
        return m;
      }
      const auto& spec = arg.as_document();
      std::vector<std::string> seen;
      for (const auto& f : spec) {
        if (f.name != "$each" && f.name != "$slice" && f.name != "$sort" && f.name != "$position") {
          return fail("Unrecognized clause in $push: " + f.name, bad_value);
        }
        if (std::find(seen.begin(), seen.end(), f.name) != seen.end()) {
          return fail("Only one " + f.name + " is supported.", bad_value);
        }
        seen.push_back(f.name);
      }
      const auto& each = *spec.get("$each");
      if (!each.is_array()) {
        return fail(
            "The argument to $each in $push must be an array but it was of type: " + type_of(each),
            bad_value);
      }
      m.values_ = each.as_array();
      if (const auto* slice = spec.get("$slice")) {
        auto n = parse_integer("$slice", *slice);
        if (!n) {
          return fail("The value for $slice must be an integer value but was given type: " +
                          type_of(*slice),
                      bad_value);
        }
        m.slice_ = *n;
      }
      if (const auto* sort = spec.get("$sort")) {
        if (sort->is_document()) {
          if (auto s = check_sort_pattern(sort->as_document()); !s) return propagate(s.error());
          m.sort_ = push_sort{false, 1, sort->as_document()};
        } else if (sort->is_number()) {
          const double order = sort->to_double();
          if (order != 1 && order != -1) {
            return fail("The $sort element value must be either 1 or -1", bad_value);
          }
          m.sort_ = push_sort{true, order < 0 ? -1 : 1, {}};
        } else {
          return fail(
              "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort "
              "embedded fields",
              bad_value);
        }
      }
      if (const auto* position = spec.get("$position")) {
        auto n = parse_integer("$position", *position);
        if (!n) {
          return fail("The value for $position must be an integer value, not of type: " +
                          type_of(*position),
                      bad_value);
        }
        m.position_ = *n;
      }
      return m;
    }
    case op_kind::add_to_set: {
      bson::array items{arg};
      if (arg.is_document() && !arg.as_document().empty() &&
          arg.as_document().fields().front().name == "$each") {
        const auto& each = arg.as_document().fields().front().val;
        if (!each.is_array()) {
          return fail("The argument to $each in $addToSet must be an array but it was of type " +
                          type_of(each),
                      type_mismatch);
        }
        if (arg.as_document().size() > 1) {
          return fail("Found unexpected fields after $each in $addToSet: " +
                          document_text(arg.as_document()),
                      bad_value);
        }
        items = each.as_array();
      }
      for (auto& item : items) {
        const bool duplicate = std::any_of(m.values_.begin(), m.values_.end(),
                                           [&](const bson::value& v) { return equal(v, item); });
        if (!duplicate) m.values_.push_back(std::move(item));
      }
      return m;
    }
    case op_kind::pull: {
      if (arg.is_document()) {
        const auto& spec = arg.as_document();
        if (spec.empty() || !is_path_accepting_operator(spec.fields().front().name)) {
          auto matcher = compile_pull(spec);
          if (!matcher) return propagate(matcher.error());
          m.pull_form_ = pull_form::object;
          m.pull_matcher_ = std::move(matcher).value();
          return m;
        }
      }
      if (arg.is_document() || arg.is<bson::regex>()) {
        auto matcher = compile_pull(bson::document{{std::string(pull_wrap_field), arg}});
        if (!matcher) return propagate(matcher.error());
        m.pull_form_ = pull_form::wrapped;
        m.pull_matcher_ = std::move(matcher).value();
        return m;
      }
      m.pull_form_ = pull_form::equality;
      return m;
    }
    case op_kind::pull_all:
      if (!arg.is_array()) {
        return fail("$pullAll requires an array argument but was given a " + type_of(arg),
                    bad_value);
      }
      m.values_ = arg.as_array();
      return m;
    case op_kind::pop: {
      auto n = parse_integer(field, arg);
      if (!n) return propagate(n.error());
      if (*n != 1 && *n != -1) {
        return fail("$pop expects 1 or -1, found: " + std::to_string(*n), failed_to_parse);
      }
      m.pop_front_ = *n == -1;
      return m;
    }
    case op_kind::rename: {
      // `field` is the source, `arg` the destination (already known to be a string).
      const std::string& to = arg.as_string();
      if (to.find('\0') != std::string::npos) {
        return fail("The 'to' field for $rename cannot contain an embedded null byte", bad_value);
      }
      const auto from_parts = split_path(field);
      const auto to_parts = split_path(to);
      if (from_parts == to_parts) {
        return fail(
            "The source and target field for $rename must differ: " + element_text(field, arg),
            bad_value);
      }
      auto is_prefix = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
        return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
      };
      if (is_prefix(from_parts, to_parts) || is_prefix(to_parts, from_parts)) {
        return fail("The source and target field for $rename must not be on the same path: " +
                        element_text(field, arg),
                    bad_value);
      }
      auto dynamic = [](const std::vector<std::string>& parts) {
        return std::any_of(parts.begin(), parts.end(), [](const std::string& p) {
          return is_positional(p) || is_array_filter_identifier(p);
        });
      };
      if (dynamic(from_parts)) {
        return fail("The source field for $rename may not be dynamic: " + field, bad_value);
      }
      if (dynamic(to_parts)) {
        return fail("The destination field for $rename may not be dynamic: " + to, bad_value);
      }
      m.rename_from_ = field;
      return m;
    }
  }
  return m;
}

bool modifier::creates_paths() const {
  switch (kind_) {
    case op_kind::unset:
    case op_kind::pull:
    case op_kind::pull_all:
    case op_kind::pop:
    case op_kind::conflict_placeholder:
      return false;
    default:
      return true;
  }
}

bool modifier::allows_non_viable() const {
  return kind_ == op_kind::unset;
}

bool modifier::pull_matches(const bson::value& element) const {
  switch (pull_form_) {
    case pull_form::equality:
      return equal(element, arg_);
    case pull_form::object:
      return element.is_document() && pull_matcher_->matches(element.as_document());
    case pull_form::wrapped:
      return pull_matcher_->matches(bson::document{{std::string(pull_wrap_field), element}});
  }
  return false;
}

expected<modify_result> modifier::push_into(bson::array& items) const {
  modify_result result;
  if (!values_.empty()) {
    const auto size = static_cast<std::int64_t>(items.size());
    std::int64_t at = size;
    if (size == 0) {
      result.k = modify_result::kind::normal;
    } else if (!position_ || *position_ > size) {
      result.k = modify_result::kind::appended;
      result.appended = values_.size();
    } else {
      result.k = modify_result::kind::normal;
      // Negative positions count from the end; one past the front clamps to the front.
      const std::int64_t magnitude =
          *position_ == INT64_MIN ? INT64_MAX : (*position_ < 0 ? -*position_ : *position_);
      if (*position_ >= 0) {
        at = *position_;
      } else {
        at = magnitude < size ? size - magnitude : 0;
      }
    }
    items.insert(items.begin() + at, values_.begin(), values_.end());
  }
  if (sort_) {
    result.k = modify_result::kind::normal;
    sort_for_push(items, sort_->whole, sort_->direction, sort_->pattern);
  }
  if (slice_) {
    const std::int64_t magnitude =
        *slice_ == INT64_MIN ? INT64_MAX : (*slice_ < 0 ? -*slice_ : *slice_);
    if (static_cast<std::int64_t>(items.size()) > magnitude) {
      result.k = modify_result::kind::normal;
      const auto keep = static_cast<std::size_t>(magnitude);
      if (*slice_ >= 0) {
        items.resize(keep);
      } else {
        items.erase(items.begin(), items.end() - static_cast<std::ptrdiff_t>(keep));
      }
    }
  }
  return result;
}

expected<modify_result> modifier::update_existing(bson::value& target,
                                                  const modifier_inputs& in) const {
  const modify_result noop{};
  const modify_result normal{modify_result::kind::normal, 0};
  switch (kind_) {
    case op_kind::set:
    case op_kind::set_on_insert:
      // binaryEqualValues: same type and bytes; 1 and 1.0 differ.
      if (binary_equal(target, arg_)) return noop;
      target = arg_;
      return normal;
    case op_kind::unset:
    case op_kind::conflict_placeholder:
    case op_kind::rename:
      return noop;  // handled by update_applier
    case op_kind::inc:
    case op_kind::mul: {
      const char* name = kind_ == op_kind::inc ? "$inc" : "$mul";
      if (!target.is_number()) {
        return fail(std::string("Cannot apply ") + name + " to a value of non-numeric type. {" +
                        in.id_text + "} has the field '" + in.field + "' of non-numeric type " +
                        type_of(target),
                    type_mismatch);
      }
      auto result = arithmetic(kind_ == op_kind::inc ? arithmetic_op::add : arithmetic_op::multiply,
                               arg_, target);
      if (result && identical_number(*result, target)) return noop;
      if (!result) {
        return fail(std::string("Failed to apply ") + name + " operations to current value (" +
                        number_debug_string(target) + ") for document {" + in.id_text + "}",
                    bad_value);
      }
      target = std::move(*result);
      return normal;
    }
    case op_kind::min:
    case op_kind::max: {
      const int c = bson::compare(target, arg_);
      if (kind_ == op_kind::min ? c <= 0 : c >= 0) return noop;
      target = arg_;
      return normal;
    }
    case op_kind::current_date:
      target = new_value(in);
      return normal;
    case op_kind::bit: {
      if (!target.is<std::int32_t>() && !target.is<std::int64_t>()) {
        return fail("Cannot apply $bit to a value of non-integral type." + in.id_text +
                        " has the field " + in.field + " of non-integer type " + type_of(target),
                    bad_value);
      }
      bson::value result = target;
      for (const auto& [code, operand] : bit_ops_) {
        result = bitwise(static_cast<bitwise_op>(code), result, operand);
      }
      if (identical_number(result, target)) return noop;
      target = std::move(result);
      return normal;
    }
    case op_kind::push:
      if (!target.is_array()) {
        return fail("The field '" + in.path + "' must be an array but is of type " +
                        type_of(target) + " in document {" + in.id_text + "}",
                    bad_value);
      }
      return push_into(target.as_array());
    case op_kind::add_to_set: {
      if (!target.is_array()) {
        return fail("Cannot apply $addToSet to non-array field. Field named '" + in.field +
                        "' has non-array type " + type_of(target),
                    bad_value);
      }
      auto& items = target.as_array();
      modify_result result;
      for (const auto& v : values_) {
        const bool present = std::any_of(items.begin(), items.end(),
                                         [&](const bson::value& e) { return equal(e, v); });
        if (present) continue;
        items.push_back(v);
        ++result.appended;
      }
      if (result.appended > 0) result.k = modify_result::kind::appended;
      return result;
    }
    case op_kind::pull:
    case op_kind::pull_all: {
      if (!target.is_array()) return fail("Cannot apply $pull to a non-array value", bad_value);
      auto& items = target.as_array();
      const auto before = items.size();
      std::erase_if(items, [&](const bson::value& e) {
        if (kind_ == op_kind::pull) return pull_matches(e);
        return std::any_of(values_.begin(), values_.end(),
                           [&](const bson::value& v) { return equal(e, v); });
      });
      return items.size() == before ? noop : normal;
    }
    case op_kind::pop: {
      if (!target.is_array()) {
        return fail("Path '" + in.path + "' contains an element of non-array type '" +
                        type_of(target) + "'",
                    type_mismatch);
      }
      auto& items = target.as_array();
      if (items.empty()) return noop;
      items.erase(pop_front_ ? items.begin() : items.end() - 1);
      return normal;
    }
  }
  return noop;
}

bson::value modifier::new_value(const modifier_inputs& in) const {
  switch (kind_) {
    case op_kind::inc:
      return arg_;
    case op_kind::mul:
      // The created value has the operand's type and a zero value.
      return arithmetic(arithmetic_op::multiply, arg_, bson::value(std::int32_t{0}))
          .value_or(bson::value(0.0));
    case op_kind::current_date:
      if (date_) return in.now;
      return in.now_timestamp;
    case op_kind::bit: {
      bson::value result(std::int32_t{0});
      for (const auto& [code, operand] : bit_ops_) {
        result = bitwise(static_cast<bitwise_op>(code), result, operand);
      }
      return result;
    }
    case op_kind::push: {
      bson::value items{bson::array{}};
      (void)push_into(items.as_array());
      return items;
    }
    case op_kind::add_to_set:
      return bson::array(values_.begin(), values_.end());
    default:
      return arg_;
  }
}

void sort_for_push(bson::array& items, bool whole, int direction, const bson::document& pattern) {
  if (whole) {
    std::stable_sort(items.begin(), items.end(), [&](const bson::value& a, const bson::value& b) {
      const int c = bson::compare(a, b);
      return direction < 0 ? c > 0 : c < 0;
    });
    return;
  }
  std::vector<std::pair<std::vector<std::string>, int>> keys;
  for (const auto& f : pattern)
    keys.emplace_back(split_path(f.name), f.val.to_double() < 0 ? -1 : 1);
  static const bson::value null_value;
  auto key_of = [&](const bson::value& item, const std::vector<std::string>& parts) {
    // Non-documents are wrapped under an empty name by MongoDB, so no pattern field reaches them.
    if (!item.is_document()) return &null_value;
    const bson::value* v = sort_key_at(item, parts);
    return v == nullptr ? &null_value : v;
  };
  std::stable_sort(items.begin(), items.end(), [&](const bson::value& a, const bson::value& b) {
    for (const auto& [parts, dir] : keys) {
      const int c = bson::compare(*key_of(a, parts), *key_of(b, parts));
      if (c != 0) return dir < 0 ? c > 0 : c < 0;
    }
    return false;
  });
}

}  // namespace mongo_emulator::engine
