#include "query/matcher.h"

#include <algorithm>
#include <cmath>

#include "common/json_text.h"
#include "query/path.h"

namespace denormd::query {

namespace {

enum class node_kind { always, and_, or_, nor_, not_, leaf, elem_match_value, elem_match_doc };
enum class leaf_op { eq, gt, gte, lt, lte, in, exists, size, type, all };

}  // namespace

struct matcher::node {
  node_kind kind = node_kind::always;
  std::vector<node> children;  // and/or/nor; not: conditions on `path`; elem_match_value
  std::string path;
  leaf_op op = leaf_op::eq;
  bson::value operand;
  std::vector<int> type_codes;  // $type; -1 means "number"
};

namespace {

using node = matcher::node;
using compile_result = expected<node, compile_error>;

unexpected<compile_error> bad(std::string pointer, std::string message, int code = 2) {
  return {compile_error{std::move(pointer), std::move(message), code}};
}

bool is_operator_document(const bson::value& v) {
  return v.is_document() && !v.as_document().empty() &&
         v.as_document().fields().front().name.starts_with('$');
}

bool truthy(const bson::value& v) {
  if (v.is<bool>()) return v.as<bool>();
  if (v.is_number()) return v.to_double() != 0;
  return !v.is_null() && !v.is<bson::undefined_t>();
}

struct compiler {
  op_set ops;
  std::vector<std::string>& paths;

  bool allowed(std::string_view op) const {
    if (ops == op_set::full) return true;
    static constexpr std::string_view subset[] = {"$eq", "$ne",  "$gt",     "$gte", "$lt", "$lte",
                                                  "$in", "$nin", "$exists", "$and", "$or", "$not"};
    return std::find(std::begin(subset), std::end(subset), op) != std::end(subset);
  }

  unexpected<compile_error> unsupported(const std::string& pointer, std::string_view op) const {
    return bad(pointer, "operator " + std::string(op) +
                            " is not supported here (supported: equality, $eq $ne $gt $gte $lt "
                            "$lte $in $nin $exists $and $or $not)");
  }

  void note_path(const std::string& path) {
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
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
    } else if (op == "$nor") {
      n.kind = node_kind::nor_;
    } else if (op == "$comment") {
      return node{};
    } else {
      return bad(here, "unknown top level operator: " + op);
    }
    if (!allowed(op)) return unsupported(here, op);
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
    static constexpr std::pair<std::string_view, leaf_op> comparisons[] = {{"$eq", leaf_op::eq},
                                                                           {"$gt", leaf_op::gt},
                                                                           {"$gte", leaf_op::gte},
                                                                           {"$lt", leaf_op::lt},
                                                                           {"$lte", leaf_op::lte}};
    for (const auto& [name, lop] : comparisons) {
      if (op != name) continue;
      if (!allowed(op)) return unsupported(here, op);
      return leaf(path, lop, arg);
    }
    if (op == "$ne") return negate(leaf(path, leaf_op::eq, arg));
    if (op == "$in" || op == "$nin" || op == "$all") {
      if (!allowed(op)) return unsupported(here, op);
      if (!arg.is_array()) return bad(here, op + " needs an array");
      for (std::size_t i = 0; i < arg.as_array().size(); ++i) {
        if (is_operator_document(arg.as_array()[i]) && op != "$all") {
          return bad(pointer_join(here, std::to_string(i)), "cannot nest $ under " + op);
        }
      }
      if (op == "$all") return leaf(path, leaf_op::all, arg);
      node in = leaf(path, leaf_op::in, arg);
      return op == "$in" ? in : negate(std::move(in));
    }
    if (op == "$exists") return leaf(path, leaf_op::exists, bson::value(truthy(arg)));
    if (op == "$not") {
      if (!allowed(op)) return unsupported(here, op);
      if (!is_operator_document(arg)) return bad(here, "$not needs a regex or a document");
      auto inner = field(path, arg, here);
      if (!inner) return inner.error();
      return negate(std::move(inner).value());
    }
    if (op == "$size") {
      if (!allowed(op)) return unsupported(here, op);
      if (!arg.is_number() || arg.to_double() != std::floor(arg.to_double()) ||
          arg.to_double() < 0) {
        return bad(here, "$size needs a non-negative whole number");
      }
      return leaf(path, leaf_op::size, arg);
    }
    if (op == "$type") {
      if (!allowed(op)) return unsupported(here, op);
      node n = leaf(path, leaf_op::type, arg);
      const bson::array items = arg.is_array() ? arg.as_array() : bson::array{arg};
      if (items.empty()) return bad(here, "$type must match at least one type");
      for (const auto& item : items) {
        const int code = type_code(item);
        if (code == 0) return bad(here, "unknown type name alias or code: " + describe(item));
        n.type_codes.push_back(code);
      }
      return n;
    }
    if (op == "$elemMatch") {
      if (!allowed(op)) return unsupported(here, op);
      if (!arg.is_document()) return bad(here, "$elemMatch needs an Object");
      node n;
      n.path = path;
      const auto& spec = arg.as_document();
      const bool value_form = is_operator_document(arg) && spec.fields().front().name != "$and" &&
                              spec.fields().front().name != "$or" &&
                              spec.fields().front().name != "$nor";
      if (value_form) {
        n.kind = node_kind::elem_match_value;
        for (const auto& f : spec) {
          auto child = field_operator("", f.name, f.val, pointer_join(here, f.name));
          if (!child) return child.error();
          n.children.push_back(std::move(child).value());
        }
      } else {
        n.kind = node_kind::elem_match_doc;
        std::vector<std::string> ignored;
        compiler sub{ops, ignored};
        auto child = sub.document(spec, here);
        if (!child) return child.error();
        n.children.push_back(std::move(child).value());
      }
      return n;
    }
    return bad(here, "unknown operator: " + op);
  }

  static std::string describe(const bson::value& v) {
    if (v.is_string()) return v.as_string();
    if (v.is_number()) return std::to_string(v.to_double());
    return std::string(bson::type_name(v.kind()));
  }

  // BSON type code for $type, -1 for "number", 0 when unknown.
  static int type_code(const bson::value& v) {
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
bool test_value(const node& n, const bson::value& v) {
  switch (n.op) {
    case leaf_op::eq:
      return equal_values(v, n.operand);
    case leaf_op::in:
      return std::any_of(n.operand.as_array().begin(), n.operand.as_array().end(),
                         [&](const bson::value& o) { return equal_values(v, o); });
    case leaf_op::gt:
    case leaf_op::gte:
    case leaf_op::lt:
    case leaf_op::lte: {
      const bool bracket_free = n.operand.is<bson::min_key>() || n.operand.is<bson::max_key>();
      if (!bracket_free && bson::canonical_rank(v) != bson::canonical_rank(n.operand)) return false;
      if (n.operand.is_number() && std::isnan(n.operand.to_double())) {
        return (n.op == leaf_op::gte || n.op == leaf_op::lte) && v.is_number() &&
               std::isnan(v.to_double());
      }
      const int c = bson::compare(v, n.operand);
      if (n.op == leaf_op::gt) return c > 0;
      if (n.op == leaf_op::gte) return c >= 0;
      if (n.op == leaf_op::lt) return c < 0;
      return c <= 0;
    }
    case leaf_op::size:
      return v.is_array() && static_cast<double>(v.as_array().size()) == n.operand.to_double();
    case leaf_op::type:
      return std::any_of(n.type_codes.begin(), n.type_codes.end(), [&](int code) {
        return code == -1 ? v.is_number() : code == static_cast<int>(v.kind());
      });
    case leaf_op::exists:
    case leaf_op::all:
      return false;
  }
  return false;
}

// Whether a missing branch satisfies the leaf ({a: null} and {a: {$in: [null]}} do).
bool test_missing(const node& n) {
  switch (n.op) {
    case leaf_op::eq:
    case leaf_op::gte:
    case leaf_op::lte:
      return is_nullish(n.operand);
    case leaf_op::in:
      return std::any_of(n.operand.as_array().begin(), n.operand.as_array().end(), is_nullish);
    default:
      return false;
  }
}

bool evaluate(const node& n, const bson::document& doc, match_details* details);

// Tests a reached value, looking inside a leaf array where MongoDB does.
bool test_expanding(const node& n, const bson::value& v, std::optional<std::size_t>& index) {
  if (test_value(n, v)) return true;
  if (!v.is_array() || n.op == leaf_op::size) return false;
  const auto& items = v.as_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (n.op == leaf_op::type && items[i].is_array()) continue;
    if (test_value(n, items[i])) {
      if (!index) index = i;
      return true;
    }
  }
  // {a: null} matches an array holding null; missing handled by the caller.
  return false;
}

bool evaluate_leaf(const node& n, const bson::document& doc, match_details* details) {
  if (n.op == leaf_op::exists) {
    bool found = false;
    resolve_path(doc, n.path, [&](const bson::value&, std::optional<std::size_t>) {
      found = true;
      return false;
    });
    return found == n.operand.as<bool>();
  }
  if (n.op == leaf_op::all) {
    const auto& items = n.operand.as_array();
    if (items.empty()) return false;
    node probe;
    probe.kind = node_kind::leaf;
    probe.path = n.path;
    for (const auto& item : items) {
      probe.op = leaf_op::eq;
      probe.operand = item;
      if (!evaluate_leaf(probe, doc, details)) return false;
    }
    return true;
  }
  bool matched = false;
  std::optional<std::size_t> hit_index;
  resolve_branches(doc, n.path, [&](const bson::value* v, std::optional<std::size_t> index) {
    if (v == nullptr) {
      matched = test_missing(n);
    } else {
      matched = test_expanding(n, *v, index);
    }
    if (matched) hit_index = index;
    return !matched;
  });
  if (matched && details != nullptr && !details->array_index) details->array_index = hit_index;
  return matched;
}

bool evaluate_elem_match(const node& n, const bson::document& doc, match_details* details) {
  bool matched = false;
  std::optional<std::size_t> hit_index;
  resolve_path(doc, n.path, [&](const bson::value& v, std::optional<std::size_t> index) {
    if (!v.is_array()) return true;
    const auto& items = v.as_array();
    for (std::size_t i = 0; i < items.size() && !matched; ++i) {
      if (n.kind == node_kind::elem_match_doc) {
        matched =
            items[i].is_document() && evaluate(n.children.front(), items[i].as_document(), nullptr);
      } else {
        // Conditions apply to the element itself: wrap it so leaves can address it by "".
        bson::document wrapper{{"", items[i]}};
        matched = std::all_of(n.children.begin(), n.children.end(),
                              [&](const node& c) { return evaluate(c, wrapper, nullptr); });
      }
      if (matched) hit_index = index ? index : std::optional<std::size_t>(i);
    }
    return !matched;
  });
  if (matched && details != nullptr && !details->array_index) details->array_index = hit_index;
  return matched;
}

bool evaluate(const node& n, const bson::document& doc, match_details* details) {
  switch (n.kind) {
    case node_kind::always:
      return true;
    case node_kind::and_:
      return std::all_of(n.children.begin(), n.children.end(),
                         [&](const node& c) { return evaluate(c, doc, details); });
    case node_kind::or_:
      return std::any_of(n.children.begin(), n.children.end(),
                         [&](const node& c) { return evaluate(c, doc, details); });
    case node_kind::nor_:
      return std::none_of(n.children.begin(), n.children.end(),
                          [&](const node& c) { return evaluate(c, doc, nullptr); });
    case node_kind::not_:
      return !evaluate(n.children.front(), doc, nullptr);
    case node_kind::leaf:
      return evaluate_leaf(n, doc, details);
    case node_kind::elem_match_value:
    case node_kind::elem_match_doc:
      return evaluate_elem_match(n, doc, details);
  }
  return false;
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

matcher::matcher() : root_(std::make_shared<node>()) {}

expected<matcher, compile_error> matcher::compile(const bson::document& filter, op_set ops) {
  matcher m;
  compiler c{ops, m.paths_};
  auto root = c.document(filter, "");
  if (!root) return unexpected<compile_error>{root.error()};
  m.root_ = std::make_shared<node>(std::move(root).value());
  m.filter_ = filter;
  return m;
}

bool matcher::matches(const bson::document& doc, match_details* details) const {
  return evaluate(*root_, doc, details);
}

std::vector<std::pair<std::string, bson::value>> matcher::equalities() const {
  std::vector<std::pair<std::string, bson::value>> out;
  collect_equalities(filter_, out);
  return out;
}

bool paths_overlap(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (a.size() == b.size() || b[a.size()] == '.');
}

}  // namespace denormd::query
