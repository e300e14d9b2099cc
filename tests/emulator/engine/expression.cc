#include "expression.h"

#include "field_path.h"
#include "value_text.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

struct expression::node {
  enum class kind { constant, field_path, root, remove, object, array };
  kind k = kind::constant;
  bson::value constant;
  std::vector<std::string> path;                           // field_path, or the rest after $$ROOT
  std::vector<std::pair<std::string, expression>> fields;  // object
  std::vector<expression> items;                           // array
};

namespace {

constexpr int invalid_pipeline_operator = 168;

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

}  // namespace

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

expression expression::constant(bson::value v) {
  auto n = std::make_shared<node>();
  n->constant = std::move(v);
  expression e;
  e.root_ = std::move(n);
  return e;
}

expected<expression> expression::parse(const bson::value& spec) {
  auto n = std::make_shared<node>();
  if (spec.is_string() && spec.as_string().starts_with("$")) {
    const std::string& text = spec.as_string();
    if (text.starts_with("$$")) {
      const auto dot = text.find('.');
      const std::string variable = text.substr(2, dot == std::string::npos ? dot : dot - 2);
      if (variable == "ROOT" || variable == "CURRENT") {
        n->k = node::kind::root;
      } else if (variable == "REMOVE") {
        n->k = node::kind::remove;
      } else {
        return fail("Use of undefined variable: " + variable, 17276);
      }
      if (dot != std::string::npos) {
        if (auto s = check_field_path(text.substr(dot + 1)); !s) return propagate(s.error());
        n->path = split_path(text.substr(dot + 1));
      }
    } else {
      if (text.size() == 1) return fail("'$' by itself is not a valid FieldPath", 16872);
      if (auto s = check_field_path(text.substr(1)); !s) return propagate(s.error());
      n->k = node::kind::field_path;
      n->path = split_path(text.substr(1));
    }
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
      if (op.name != "$literal") {
        return fail("Unrecognized expression '" + op.name + "'", invalid_pipeline_operator);
      }
      n->constant = op.val;
    } else {
      n->k = node::kind::object;
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
        auto e = parse(f.val);
        if (!e) return e;
        n->fields.emplace_back(f.name, std::move(e).value());
      }
    }
  } else if (spec.is_array()) {
    n->k = node::kind::array;
    for (const auto& item : spec.as_array()) {
      auto e = parse(item);
      if (!e) return e;
      n->items.push_back(std::move(e).value());
    }
  } else {
    n->constant = spec;
  }
  expression e;
  e.root_ = std::move(n);
  return e;
}

std::optional<bson::value> expression::evaluate(const bson::document& root) const {
  const node& n = *root_;
  switch (n.k) {
    case node::kind::constant:
      return n.constant;
    case node::kind::field_path:
    case node::kind::root: {
      if (n.path.empty()) return bson::value(root);
      const bson::value* first = root.get(n.path.front());
      if (first == nullptr) return std::nullopt;
      return value_at_path(*first, n.path, 1);
    }
    case node::kind::remove:
      return std::nullopt;
    case node::kind::object: {
      bson::document out;
      for (const auto& [name, e] : n.fields) {
        if (auto v = e.evaluate(root)) out.append(name, std::move(*v));
      }
      return bson::value(std::move(out));
    }
    case node::kind::array: {
      bson::array out;
      // A missing value inside an array literal becomes null.
      for (const auto& e : n.items)
        out.push_back(e.evaluate(root).value_or(bson::value{}));
      return bson::value(std::move(out));
    }
  }
  return std::nullopt;
}

}  // namespace mongo_emulator::engine
