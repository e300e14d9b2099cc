#include "query/matcher.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <unordered_set>

#include "common/json_text.h"
#include "query/path.h"

namespace denormd::query {

namespace {

enum class node_kind { always, and_, or_, not_, leaf, extension };
enum class leaf_op { eq, gt, gte, lt, lte, in, exists };

constexpr std::pair<std::string_view, leaf_op> comparisons[] = {{"$eq", leaf_op::eq},
                                                                {"$gt", leaf_op::gt},
                                                                {"$gte", leaf_op::gte},
                                                                {"$lt", leaf_op::lt},
                                                                {"$lte", leaf_op::lte}};

}  // namespace

struct matcher::node {
  node_kind kind = node_kind::always;
  std::vector<node> children;  // and/or/nor; not: conditions on `path`; elem_match_value
  std::string path;
  leaf_op op = leaf_op::eq;
  bson::value operand;
  predicate_ptr extended;  // extension
};

namespace {

using node = matcher::node;
using compile_result = expected<node, compile_error>;

unexpected<compile_error> bad(std::string pointer, std::string message, int code = 2) {
  return {compile_error{std::move(pointer), std::move(message), code}};
}

bool truthy(const bson::value& v) {
  if (v.is<bool>()) return v.as<bool>();
  if (v.is_number()) return v.to_double() != 0;
  return !v.is_null() && !v.is<bson::undefined_t>();
}

struct compiler {
  const operator_extension* extension;  // nullptr: the mapping language only
  std::vector<std::string>& paths;
  std::unordered_set<std::string> seen = {};  // `paths` as a set: a filter may name 100,000

  // An operator neither the mapping language nor the extension knows.
  unexpected<compile_error> not_known(const std::string& pointer, const std::string& op,
                                      const char* unknown_text) const {
    if (extension != nullptr) return bad(pointer, unknown_text + op);
    return bad(pointer, "operator " + op +
                            " is not supported here (supported: equality, $eq $ne $gt $gte $lt "
                            "$lte $in $nin $exists $and $or $not)");
  }

  void note_path(const std::string& path) {
    if (seen.insert(path).second) paths.push_back(path);
  }

  compile_result document(const bson::document& filter, const std::string& pointer) {
    node n;
    n.kind = node_kind::and_;
    for (const auto& f : filter) {
      const std::string here = pointer_join(pointer, f.name);
      if (f.name.starts_with('$')) {
        auto child = logical(f.name, f.val, here);
        if (!child) return child.error();
        n.children.push_back(std::move(child).value());
        continue;
      }
      if (f.name.empty()) return bad(here, "empty field name in a query");
      auto child = field(f.name, f.val, here);
      if (!child) return child.error();
      n.children.push_back(std::move(child).value());
    }
    if (n.children.empty()) n.kind = node_kind::always;
    return n;
  }

  compile_result logical(const std::string& op, const bson::value& arg, const std::string& here) {
    node n;
    if (op == "$and") {
      n.kind = node_kind::and_;
    } else if (op == "$or") {
      n.kind = node_kind::or_;
    } else if (op == "$comment") {
      return node{};
    } else if (extension == nullptr) {
      return not_known(here, op, "");
    } else {
      return extended(extension->top_level_operator(op, arg, here), here, op,
                      "unknown top level operator: ");
    }
    if (!arg.is_array() || arg.as_array().empty()) {
      return bad(here, op + " must be a nonempty array");
    }
    const auto& items = arg.as_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string item_ptr = pointer_join(here, std::to_string(i));
      if (!items[i].is_document()) return bad(item_ptr, op + " argument's entries must be objects");
      auto child = document(items[i].as_document(), item_ptr);
      if (!child) return child.error();
      n.children.push_back(std::move(child).value());
    }
    return n;
  }

  // A node for what the extension compiled, or the error for an operator it does not know.
  compile_result extended(expected<predicate_ptr, compile_error> p, const std::string& here,
                          const std::string& op, const char* unknown_text) {
    if (!p) return unexpected<compile_error>{p.error()};
    if (*p == nullptr) return not_known(here, op, unknown_text);
    for (const auto& path : (*p)->paths())
      note_path(path);
    node n;
    n.kind = node_kind::extension;
    n.extended = std::move(p).value();
    return n;
  }

  compile_result field(const std::string& path, const bson::value& spec, const std::string& here) {
    note_path(path);
    if (!is_operator_document(spec)) return leaf(path, leaf_op::eq, spec);
    node n;
    n.kind = node_kind::and_;
    for (const auto& f : spec.as_document()) {
      auto child = field_operator(path, f.name, f.val, pointer_join(here, f.name));
      if (!child) return child.error();
      n.children.push_back(std::move(child).value());
    }
    return n.children.size() == 1 ? std::move(n.children.front()) : std::move(n);
  }

  static node leaf(const std::string& path, leaf_op op, bson::value operand) {
    node n;
    n.kind = node_kind::leaf;
    n.path = path;
    n.op = op;
    n.operand = std::move(operand);
    return n;
  }

  static node negate(node inner) {
    node n;
    n.kind = node_kind::not_;
    n.children.push_back(std::move(inner));
    return n;
  }

  compile_result field_operator(const std::string& path, const std::string& op,
                                const bson::value& arg, const std::string& here) {
    if (!op.starts_with('$')) return bad(here, "unknown operator: " + op);
    for (const auto& [name, lop] : comparisons) {
      if (op == name) return leaf(path, lop, arg);
    }
    if (op == "$ne") return negate(leaf(path, leaf_op::eq, arg));
    if (op == "$in" || op == "$nin") {
      if (!arg.is_array()) return bad(here, op + " needs an array");
      for (std::size_t i = 0; i < arg.as_array().size(); ++i) {
        if (is_operator_document(arg.as_array()[i])) {
          return bad(pointer_join(here, std::to_string(i)), "cannot nest $ under " + op);
        }
      }
      node in = leaf(path, leaf_op::in, arg);
      return op == "$in" ? in : negate(std::move(in));
    }
    if (op == "$exists") return leaf(path, leaf_op::exists, bson::value(truthy(arg)));
    if (op == "$not") {
      if (!is_operator_document(arg)) return bad(here, "$not needs a regex or a document");
      auto inner = field(path, arg, here);
      if (!inner) return inner.error();
      return negate(std::move(inner).value());
    }
    if (extension == nullptr) return not_known(here, op, "");
    return extended(extension->field_operator(path, op, arg, here), here, op, "unknown operator: ");
  }
};

// ---- evaluation ----

bool is_nullish(const bson::value& v) {
  return v.is_null() || v.is<bson::undefined_t>();
}

// Query equality: same type class and equal; `null` also matches `undefined`.
bool equal_values(const bson::value& a, const bson::value& b) {
  if (b.is_null() && is_nullish(a)) return true;
  return bson::canonical_rank(a) == bson::canonical_rank(b) && bson::compare(a, b) == 0;
}

// Tests one value (no array expansion) against a comparison-style leaf.
bool test_leaf_value(leaf_op op, const bson::value& v, const bson::value& operand) {
  switch (op) {
    case leaf_op::eq:
      return equal_values(v, operand);
    case leaf_op::in:
      return std::any_of(operand.as_array().begin(), operand.as_array().end(),
                         [&](const bson::value& o) { return equal_values(v, o); });
    case leaf_op::gt:
    case leaf_op::gte:
    case leaf_op::lt:
    case leaf_op::lte: {
      const bool bracket_free = operand.is<bson::min_key>() || operand.is<bson::max_key>();
      if (!bracket_free && bson::canonical_rank(v) != bson::canonical_rank(operand)) return false;
      if (operand.is_number() && std::isnan(operand.to_double())) {
        return (op == leaf_op::gte || op == leaf_op::lte) && v.is_number() &&
               std::isnan(v.to_double());
      }
      const int c = bson::compare(v, operand);
      if (op == leaf_op::gt) return c > 0;
      if (op == leaf_op::gte) return c >= 0;
      if (op == leaf_op::lt) return c < 0;
      return c <= 0;
    }
    case leaf_op::exists:
      return false;
  }
  return false;
}

// Whether a missing branch satisfies the leaf ({a: null} and {a: {$in: [null]}} do).
bool leaf_accepts_missing(leaf_op op, const bson::value& operand) {
  switch (op) {
    case leaf_op::eq:
    case leaf_op::gte:
    case leaf_op::lte:
      return is_nullish(operand);
    case leaf_op::in:
      return std::any_of(operand.as_array().begin(), operand.as_array().end(), is_nullish);
    default:
      return false;
  }
}

// Tests a reached value, looking inside a leaf array where MongoDB does.
bool test_expanding(const node& n, const bson::value& v) {
  if (test_leaf_value(n.op, v, n.operand)) return true;
  if (!v.is_array()) return false;
  const auto& items = v.as_array();
  // {a: null} matches an array holding null; missing handled by the caller.
  return std::any_of(items.begin(), items.end(), [&](const bson::value& item) {
    return test_leaf_value(n.op, item, n.operand);
  });
}

bool evaluate_leaf(const node& n, const bson::document& doc) {
  bool matched = false;
  if (n.op == leaf_op::exists) {
    resolve_path(doc, n.path, [&](const bson::value&, std::optional<std::size_t>) {
      matched = true;
      return false;
    });
    return matched == n.operand.as<bool>();
  }
  resolve_branches(doc, n.path, [&](const bson::value* v, std::optional<std::size_t>) {
    matched = v == nullptr ? leaf_accepts_missing(n.op, n.operand) : test_expanding(n, *v);
    return !matched;
  });
  return matched;
}

bool evaluate(const node& n, const bson::document& doc) {
  switch (n.kind) {
    case node_kind::always:
      return true;
    case node_kind::and_:
      return std::all_of(n.children.begin(), n.children.end(),
                         [&](const node& c) { return evaluate(c, doc); });
    case node_kind::or_:
      return std::any_of(n.children.begin(), n.children.end(),
                         [&](const node& c) { return evaluate(c, doc); });
    case node_kind::not_:
      return !evaluate(n.children.front(), doc);
    case node_kind::leaf:
      return evaluate_leaf(n, doc);
    case node_kind::extension:
      return n.extended->matches(doc);
  }
  return false;
}

std::optional<leaf_op> comparison_named(std::string_view op) {
  if (op == "$in") return leaf_op::in;
  for (const auto& [name, lop] : comparisons) {
    if (op == name) return lop;
  }
  return std::nullopt;
}

void collect_equalities(const bson::document& filter,
                        std::vector<std::pair<std::string, bson::value>>& out) {
  for (const auto& f : filter) {
    if (f.name == "$and" && f.val.is_array()) {
      for (const auto& item : f.val.as_array()) {
        if (item.is_document()) collect_equalities(item.as_document(), out);
      }
    } else if (!f.name.starts_with('$')) {
      if (!is_operator_document(f.val)) {
        out.emplace_back(f.name, f.val);
      } else if (const auto* eq = f.val.as_document().get("$eq")) {
        out.emplace_back(f.name, *eq);
      }
    }
  }
}

}  // namespace

bool is_operator_document(const bson::value& v) {
  return v.is_document() && !v.as_document().empty() &&
         v.as_document().fields().front().name.starts_with('$');
}

bool test_value(std::string_view op, const bson::value& v, const bson::value& operand) {
  const auto lop = comparison_named(op);
  assert(lop && "test_value takes $eq $gt $gte $lt $lte $in");
  return test_leaf_value(*lop, v, operand);
}

bool accepts_missing(std::string_view op, const bson::value& operand) {
  const auto lop = comparison_named(op);
  assert(lop && "accepts_missing takes $eq $gt $gte $lt $lte $in");
  return leaf_accepts_missing(*lop, operand);
}

matcher::matcher() : root_(std::make_shared<node>()) {}

expected<matcher, compile_error> matcher::compile_with(const bson::document& filter,
                                                       const operator_extension* extension) {
  matcher m;
  compiler c{extension, m.paths_};
  auto root = c.document(filter, "");
  if (!root) return unexpected<compile_error>{root.error()};
  m.root_ = std::make_shared<node>(std::move(root).value());
  m.filter_ = filter;
  return m;
}

expected<matcher, compile_error> matcher::compile(const bson::document& filter, op_set) {
  return compile_with(filter, nullptr);
}

expected<matcher, compile_error> matcher::compile(const bson::document& filter,
                                                  const operator_extension& extension) {
  return compile_with(filter, &extension);
}

bool matcher::matches(const bson::document& doc) const {
  return evaluate(*root_, doc);
}

std::vector<std::pair<std::string, bson::value>> matcher::equalities() const {
  return equalities_of(filter_);
}

std::vector<std::pair<std::string, bson::value>> equalities_of(const bson::document& filter) {
  std::vector<std::pair<std::string, bson::value>> out;
  collect_equalities(filter, out);
  return out;
}

bool paths_overlap(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (a.size() == b.size() || b[a.size()] == '.');
}

}  // namespace denormd::query
