// String operators past $concat/$substrCP/$indexOfCP/$split/$strLenCP, as MongoDB 6.0's
// expression.cpp evaluates them: $toUpper and $toLower (ASCII letters only, on the value
// coerced to a string) and $trim/$ltrim/$rtrim (code points; by default the whitespace of
// kDefaultWhitespaceChars).

#include <algorithm>
#include <string>
#include <vector>

#include "expression_support.h"
#include "numeric.h"
#include "value_text.h"

namespace mongo_emulator::engine::ops {

namespace bson = denormd::bson;
using denormd::fail;

std::string coerce_to_string(const maybe_value& v) {
  if (nullish(v)) return "";
  if (v->is_string()) return v->as_string();
  if (v->is<double>()) return double_g(v->as<double>());
  if (v->is<std::int32_t>()) return std::to_string(v->as<std::int32_t>());
  if (v->is<std::int64_t>()) return std::to_string(v->as<std::int64_t>());
  if (v->is<bson::decimal128>()) return decimal_text(v->as<bson::decimal128>());
  if (v->is<bson::date_time>())
    return format_date(v->as<bson::date_time>().millis, iso_date_format);
  raise("can't convert from BSON type " + type_of(v) + " to String", 16007);
}

namespace {

template <bool Upper>
maybe_value eval_case(const node& n, evaluation& ev) {
  std::string s = coerce_to_string(arg(n, 0, ev));
  for (char& c : s) {
    if (Upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!Upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return bson::value(std::move(s));
}

// The UTF-8 code points of `s`, each as its bytes.
std::vector<std::string> code_points_of(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80 && !out.empty()) {
      out.back() += s[i];
    } else {
      out.emplace_back(1, s[i]);
    }
  }
  return out;
}

const std::vector<std::string>& default_whitespace() {
  static const std::vector<std::string> chars = {std::string(1, '\0'),
                                                 " ",
                                                 "\t",
                                                 "\n",
                                                 "\v",
                                                 "\f",
                                                 "\r",
                                                 "\u00A0",
                                                 "\u1680",
                                                 "\u2000",
                                                 "\u2001",
                                                 "\u2002",
                                                 "\u2003",
                                                 "\u2004",
                                                 "\u2005",
                                                 "\u2006",
                                                 "\u2007",
                                                 "\u2008",
                                                 "\u2009",
                                                 "\u200A",
                                                 "\u2028",
                                                 "\u2029",
                                                 "\u202F",
                                                 "\u205F",
                                                 "\u3000"};
  return chars;
}

enum class trim_side { both, left, right };

template <trim_side Side>
maybe_value eval_trim(const node& n, evaluation& ev) {
  const std::string op = Side == trim_side::both   ? "$trim"
                         : Side == trim_side::left ? "$ltrim"
                                                   : "$rtrim";
  const maybe_value input = arg(n, 0, ev);
  if (nullish(input)) return bson::value{};
  if (!input->is_string()) {
    raise(op + " requires its input to be a string, got " + value_text(*input) + " (of type " +
              type_of(input) + ") instead.",
          50699);
  }
  std::vector<std::string> chars = default_whitespace();
  if (n.items[1].tree() != nullptr) {
    const maybe_value given = arg(n, 1, ev);
    if (nullish(given)) return bson::value{};
    if (!given->is_string()) {
      raise(op + " requires 'chars' to be a string, got " + value_text(*given) + " (of type " +
                type_of(given) + ") instead.",
            50700);
    }
    chars = code_points_of(given->as_string());
  }
  const auto points = code_points_of(input->as_string());
  const auto trimmed = [&](std::size_t i) {
    return std::find(chars.begin(), chars.end(), points[i]) != chars.end();
  };
  std::size_t begin = 0;
  std::size_t end = points.size();
  while (Side != trim_side::right && begin < end && trimmed(begin))
    ++begin;
  while (Side != trim_side::left && end > begin && trimmed(end - 1))
    --end;
  std::string out;
  for (std::size_t i = begin; i < end; ++i)
    out += points[i];
  return bson::value(std::move(out));
}

// {$trim: {input, chars}}: ExpressionTrim::parse's checks.
denormd::status parse_trim(const op_spec& op, const bson::value& arg, parse_scope& scope, node& n) {
  const std::string name(op.name);
  if (!arg.is_document()) {
    return fail(name + " only supports an object as an argument, found: " +
                    std::string(bson::type_name(arg.kind())),
                50696);
  }
  const bson::value* input = nullptr;
  const bson::value* chars = nullptr;
  for (const auto& f : arg.as_document()) {
    if (f.name == "input") {
      input = &f.val;
    } else if (f.name == "chars") {
      chars = &f.val;
    } else {
      return fail(name + " found an unknown argument: " + f.name, 50694);
    }
  }
  if (input == nullptr) return fail(name + " requires an 'input' field", 50695);
  if (auto s = add_item(*input, scope, n); !s) return s;
  if (chars == nullptr) {
    n.items.emplace_back();
    return {};
  }
  return add_item(*chars, scope, n);
}

const op_spec table[] = {
    {"$toUpper", parse_list, eval_case<true>, 1, 1},
    {"$toLower", parse_list, eval_case<false>, 1, 1},
    {"$trim", parse_trim, eval_trim<trim_side::both>},
    {"$ltrim", parse_trim, eval_trim<trim_side::left>},
    {"$rtrim", parse_trim, eval_trim<trim_side::right>},
};

}  // namespace

std::span<const op_spec> string_operators() {
  return table;
}

}  // namespace mongo_emulator::engine::ops
