#include "expression.h"

#include <algorithm>
#include <chrono>

#include "expression_node.h"
#include "field_path.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

namespace {

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

bool is_ascii_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool is_non_ascii(char c) {
  return static_cast<unsigned char>(c) >= 0x80;
}

// `$$name` or `$$name.path`.
expected<expression> parse_variable(const std::string& text, parse_scope& scope) {
  auto n = std::make_shared<expression::node>();
  const auto dot = text.find('.');
  const std::string variable = text.substr(2, dot == std::string::npos ? dot : dot - 2);
  if (dot != std::string::npos) {
    if (auto s = check_field_path(text.substr(dot + 1)); !s) return propagate(s.error());
    n->path = split_path(text.substr(dot + 1));
  }
  if (variable == "ROOT" || variable == "CURRENT") {
    n->k = expression::node::kind::root;
  } else if (variable == "REMOVE") {
    n->k = expression::node::kind::remove;
  } else if (variable == "NOW") {
    // MongoDB's $$NOW: the time the command started, the same everywhere in it (an
    // expression is parsed once per command).
    n->k = expression::node::kind::constant;
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    n->constant = bson::date_time{now.count()};
    if (!n->path.empty()) n->k = expression::node::kind::remove;  // a date has no fields
    n->path.clear();
  } else if (std::find(scope.bound.rbegin(), scope.bound.rend(), variable) != scope.bound.rend()) {
    n->k = expression::node::kind::variable;
    n->name = variable;
  } else if (const bson::value* v = scope.let ? scope.let->get(variable) : nullptr) {
    // A command's `let` is constant for the whole command.
    n->k = expression::node::kind::constant;
    auto at = value_at_path(*v, n->path);
    n->path.clear();
    if (at) {
      n->constant = std::move(*at);
    } else {
      n->k = expression::node::kind::remove;  // a path into nothing: missing
    }
  } else {
    return fail("Use of undefined variable: " + variable, 17276);
  }
  return expression(std::move(n));
}

}  // namespace

const maybe_value* evaluation::lookup(const std::string& name) const {
  for (auto it = bound.rbegin(); it != bound.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

denormd::status check_variable_name(const std::string& name) {
  if (name.empty()) return fail("empty variable names are not allowed", 16866);
  if (!is_ascii_lower(name.front()) && !is_non_ascii(name.front()))
    return fail("'" + name + "' starts with an invalid character for a user variable name", 16867);
  for (const char c : name) {
    if (is_ascii_lower(c) || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        is_non_ascii(c))
      continue;
    return fail("'" + name + "' contains an invalid character for a variable name: '" +
                    std::string(1, c) + "'",
                16868);
  }
  return {};
}

denormd::status check_field_path(const std::string& path) {
  if (path.empty()) return fail("FieldPath cannot be constructed with empty string", 40352);
  if (path.back() == '.') return fail("FieldPath must not end with a '.'.", 40353);
  for (const auto& part : split_path(path)) {
    if (part.empty()) return fail("FieldPath field names may not be empty strings.", 15998);
    if (part.front() == '$') {
      return fail(
          "FieldPath field names may not start with '$'. Consider using $getField or "
          "$setField.",
          16410);
    }
  }
  return {};
}

std::optional<bson::value> value_at_path(const bson::value& v,
                                         const std::vector<std::string>& parts, std::size_t from) {
  if (from == parts.size()) return v;
  if (v.is_document()) {
    const bson::value* child = v.as_document().get(parts[from]);
    if (child == nullptr) return std::nullopt;
    return value_at_path(*child, parts, from + 1);
  }
  if (v.is_array()) {
    bson::array out;
    for (const auto& e : v.as_array()) {
      if (!e.is_document() && !e.is_array()) continue;
      if (auto r = value_at_path(e, parts, from)) out.push_back(std::move(*r));
    }
    return bson::value(std::move(out));
  }
  return std::nullopt;
}

bool truthy(const std::optional<bson::value>& v) {
  if (!v || v->is_null() || v->is<bson::undefined_t>()) return false;
  if (v->is<bool>()) return v->as<bool>();
  if (v->is_number()) return v->to_double() != 0;
  return true;
}

expression expression::constant(bson::value v) {
  auto n = std::make_shared<node>();
  n->constant = std::move(v);
  return expression(std::move(n));
}

expected<expression> parse_expression(const bson::value& spec, parse_scope& scope) {
  auto n = std::make_shared<expression::node>();
  using kind = expression::node::kind;
  if (spec.is_string() && spec.as_string().starts_with("$")) {
    const std::string& text = spec.as_string();
    if (text.starts_with("$$")) return parse_variable(text, scope);
    if (text.size() == 1) return fail("'$' by itself is not a valid FieldPath", 16872);
    if (auto s = check_field_path(text.substr(1)); !s) return propagate(s.error());
    n->k = kind::field_path;
    n->path = split_path(text.substr(1));
  } else if (spec.is_document()) {
    const auto& d = spec.as_document();
    if (!d.empty() && d.fields().front().name.starts_with('$')) {
      if (d.size() != 1) {
        return fail(
            "an expression specification must contain exactly one field, the name of "
            "the expression. Found " +
                std::to_string(d.size()) + " fields in " + document_text(d) +
                ", while parsing object " + document_text(d),
            15983);
      }
      const auto& op = d.fields().front();
      if (op.name == "$literal") {
        n->constant = op.val;
      } else {
        n->k = kind::op;
        if (auto s = parse_operator(op.name, op.val, scope, *n); !s) return propagate(s.error());
      }
    } else {
      n->k = kind::object;
      for (const auto& f : d) {
        if (f.name.find('.') != std::string::npos) {
          return fail("FieldPath field names may not contain '.'.", 16412);
        }
        if (f.name.starts_with('$')) {
          return fail(
              "FieldPath field names may not start with '$'. Consider using $getField "
              "or $setField.",
              16410);
        }
        auto e = parse_expression(f.val, scope);
        if (!e) return e;
        n->fields.emplace_back(f.name, std::move(e).value());
      }
    }
  } else if (spec.is_array()) {
    n->k = kind::array;
    for (const auto& item : spec.as_array()) {
      auto e = parse_expression(item, scope);
      if (!e) return e;
      n->items.push_back(std::move(e).value());
    }
  } else {
    n->constant = spec;
  }
  return expression(std::move(n));
}

expected<expression> expression::parse(const bson::value& spec, const bson::document* let) {
  parse_scope scope{let, {}};
  return parse_expression(spec, scope);
}

maybe_value evaluate_in(const expression& e, evaluation& ev) {
  const expression::node* n = e.tree();
  if (n == nullptr) return std::nullopt;  // an absent optional argument
  using kind = expression::node::kind;
  switch (n->k) {
    case kind::constant:
      return n->constant;
    case kind::field_path:
    case kind::root: {
      if (n->path.empty()) return bson::value(ev.root);
      const bson::value* first = ev.root.get(n->path.front());
      if (first == nullptr) return std::nullopt;
      return value_at_path(*first, n->path, 1);
    }
    case kind::variable: {
      const maybe_value* v = ev.lookup(n->name);
      if (v == nullptr || !*v) return std::nullopt;  // unbound is not reachable: parsing checks
      return value_at_path(**v, n->path);
    }
    case kind::remove:
      return std::nullopt;
    case kind::object: {
      bson::document out;
      for (const auto& [name, item] : n->fields) {
        if (auto v = evaluate_in(item, ev)) out.append(name, std::move(*v));
      }
      return bson::value(std::move(out));
    }
    case kind::array: {
      bson::array out;
      // A missing value inside an array literal becomes null.
      for (const auto& item : n->items)
        out.push_back(evaluate_in(item, ev).value_or(bson::value{}));
      return bson::value(std::move(out));
    }
    case kind::op:
      return n->eval(*n, ev);
  }
  return std::nullopt;
}

std::optional<bson::value> expression::evaluate(const bson::document& root) const {
  evaluation ev{root, {}};
  return evaluate_in(*this, ev);
}

expected<bson::document> evaluate_let(const bson::value* let) {
  bson::document out;
  if (let == nullptr) return out;
  if (!let->is_document()) {
    return fail("BSON field 'let' is the wrong type '" + std::string(bson::type_name(let->kind())) +
                    "', expected type 'object'",
                14);
  }
  static const bson::document empty;
  for (const auto& f : let->as_document()) {
    if (auto s = check_variable_name(f.name); !s) return propagate(s.error());
    parse_scope scope{&out, {}};
    auto e = parse_expression(f.val, scope);
    if (!e) return propagate(e.error());
    auto v = catch_expression_errors([&]() -> expected<maybe_value> {
      evaluation ev{empty, {}};
      return evaluate_in(*e, ev);
    });
    if (!v) return propagate(v.error());
    out.append(f.name, v->value_or(bson::value{}));
  }
  return out;
}

}  // namespace mongo_emulator::engine
