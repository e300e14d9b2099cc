#include "projection.h"

#include <optional>
#include <string>
#include <vector>

#include "expression.h"
#include "field_path.h"
#include "query/matcher.h"
#include "query_operators.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
namespace query = denormd::query;
using denormd::expected;
using denormd::fail;

struct projection::node {
  enum class kind { tree, include, exclude, computed, slice, elem_match };
  kind k = kind::tree;
  std::vector<std::pair<std::string, node>> children;  // tree: in spec order
  std::optional<expression> expr;                      // computed
  std::optional<std::int32_t> slice_skip;              // slice: [skip, limit] form
  std::int32_t slice_limit = 0;                        // slice: count, or limit
  std::optional<query::matcher> elem_match;            // over {field: [element]}
  bool has_computed = false;                           // tree: a computed field below

  const node* find(const std::string& name) const {
    for (const auto& [n, child] : children) {
      if (n == name) return &child;
    }
    return nullptr;
  }
  node* find(const std::string& name) {
    for (auto& [n, child] : children) {
      if (n == name) return &child;
    }
    return nullptr;
  }
};

namespace {

using node = projection::node;

constexpr int bad_value = 2;

denormd::unexpected<denormd::error> propagate(const denormd::error& e) {
  return {e};
}

bool is_positional_path(const std::string& path) {
  return path == "$" || path.ends_with(".$") || path.find(".$.") != std::string::npos;
}

struct parser {
  projection::flavour flavour;
  node root;
  std::optional<bool> inclusion;
  bool id_specified = false;
  bool id_included = false;
  bool has_slice = false;
  bool has_elem_match = false;
  const bson::document* let = nullptr;  // the command's variables, for computed fields

  // ProjectionPathASTNode's addNodeAtPath, with its collision errors.
  denormd::status add(const std::string& path, node leaf) {
    const auto parts = split_path(path);
    node* current = &root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      node* child = current->find(parts[i]);
      if (child == nullptr) {
        current->children.emplace_back(parts[i], node{});
        child = &current->children.back().second;
      } else if (child->k != node::kind::tree) {
        return fail("Path collision at " + path + " remaining portion " + join_path(parts, 1),
                    31249);
      }
      if (leaf.k == node::kind::computed) child->has_computed = true;
      current = child;
    }
    if (current->find(parts.back()) != nullptr) return fail("Path collision at " + path, 31250);
    current->children.emplace_back(parts.back(), std::move(leaf));
    return {};
  }

  denormd::status computed(const std::string& path, const bson::value& spec) {
    if (inclusion && !*inclusion) {
      return fail("Cannot use expression other than $meta in exclusion projection", 31252);
    }
    auto e = expression::parse(spec, let);
    if (!e) return propagate(e.error());
    inclusion = true;
    node n;
    n.k = node::kind::computed;
    n.expr = std::move(e).value();
    return add(path, std::move(n));
  }

  denormd::status find_operator(const std::string& path, const bson::document& spec) {
    const auto& op = spec.fields().front();
    node n;
    if (op.name == "$slice") {
      n.k = node::kind::slice;
      if (op.val.is_number()) {
        n.slice_limit = static_cast<std::int32_t>(op.val.to_double());
      } else if (op.val.is_array()) {
        const auto& a = op.val.as_array();
        if (a.size() != 2)
          return fail("$slice array argument should be of form [skip, limit]", 31272);
        if (!a[0].is_number()) {
          return fail("$slice expects the skip argument to be a number, got " +
                          std::string(bson::type_name(a[0].kind())),
                      31257);
        }
        if (!a[1].is_number()) {
          return fail("$slice expects the limit argument to be a number, got " +
                          std::string(bson::type_name(a[1].kind())),
                      31258);
        }
        const auto limit = static_cast<std::int32_t>(a[1].to_double());
        if (limit <= 0)
          return fail("$slice limit must be positive, got " + std::to_string(limit), 31259);
        n.slice_skip = static_cast<std::int32_t>(a[0].to_double());
        n.slice_limit = limit;
      } else {
        return fail("$slice only supports numbers and [skip, limit] arrays", 31273);
      }
      has_slice = true;
      return add(path, std::move(n));
    }
    if (op.name == "$elemMatch") {
      if (!op.val.is_document()) {
        return fail("elemMatch: Invalid argument, object required, but got " +
                        std::string(bson::type_name(op.val.kind())),
                    31274);
      }
      if (path.find('.') != std::string::npos) {
        return fail("Cannot use $elemMatch projection on a nested field.", 31275);
      }
      auto m = compile_query(bson::document{{path, bson::document{{"$elemMatch", op.val}}}});
      if (!m) return fail(m.error().message, m.error().code);
      n.k = node::kind::elem_match;
      n.elem_match = std::move(m).value();
      has_elem_match = true;
      return add(path, std::move(n));
    }
    if (op.name == "$meta")
      return fail("$meta projections are not supported by mongo-emulator", bad_value);
    return computed(path, bson::value(spec));
  }

  denormd::status field(const std::string& path, const bson::value& v) {
    if (is_positional_path(path)) {
      return fail("positional projection ('" + path + "') is not supported by mongo-emulator",
                  bad_value);
    }
    if (auto s = check_field_path(path); !s) return s;
    id_specified = id_specified || path == "_id" || path.starts_with("_id.");
    if (v.is_document()) {
      const auto& d = v.as_document();
      if (d.empty()) {
        return fail("An empty sub-projection is not a valid value. Found empty object at path",
                    51270);
      }
      if (d.fields().front().name.starts_with('$')) {
        if (flavour == projection::flavour::find) return find_operator(path, d);
        return computed(path, v);
      }
      for (const auto& f : d) {
        if (auto s = field(path + "." + f.name, f.val); !s) return s;
      }
      return {};
    }
    if (v.is<bool>() || v.is_number()) {
      const bool include = v.is<bool>() ? v.as<bool>() : v.to_double() != 0;
      node n;
      n.k = include ? node::kind::include : node::kind::exclude;
      if (include && path == "_id") {
        // A top-level _id may be included in either kind of projection.
        id_included = true;
      } else if (include) {
        if (inclusion && !*inclusion) {
          return fail("Cannot do inclusion on field " + path + " in exclusion projection", 31253);
        }
        inclusion = true;
      } else if (path != "_id") {
        if (inclusion && *inclusion) {
          return fail("Cannot do exclusion on field " + path + " in inclusion projection", 31254);
        }
        inclusion = false;
      }
      return add(path, std::move(n));
    }
    return computed(path, v);
  }
};

bson::array sliced(const bson::array& items, const node& n) {
  const auto size = static_cast<std::int64_t>(items.size());
  std::int64_t begin = 0;
  std::int64_t count = 0;
  if (n.slice_skip) {
    begin = *n.slice_skip >= 0 ? *n.slice_skip : std::max<std::int64_t>(0, size + *n.slice_skip);
    count = n.slice_limit;
  } else if (n.slice_limit >= 0) {
    count = n.slice_limit;
  } else {
    begin = std::max<std::int64_t>(0, size + n.slice_limit);
    count = size;
  }
  begin = std::min(begin, size);
  const std::int64_t end = std::min(size, begin + count);
  return bson::array(items.begin() + begin, items.begin() + end);
}

// find's $slice and $elemMatch: the transformed value, or nullopt to leave the field out.
std::optional<bson::value> operator_value(const std::string& name, const node& n,
                                          const bson::value& v) {
  if (n.k == node::kind::slice) {
    if (!v.is_array()) return v;
    return bson::value(sliced(v.as_array(), n));
  }
  if (!v.is_array()) return std::nullopt;
  for (const auto& e : v.as_array()) {
    if (n.elem_match->matches(bson::document{{name, bson::array{e}}})) {
      return bson::value(bson::array{e});
    }
  }
  return std::nullopt;
}

bson::document include_document(const node& n, const bson::document& d, const bson::document& root);

std::optional<bson::value> include_value(const node& n, const bson::value& v,
                                         const bson::document& root) {
  if (v.is_document()) return bson::value(include_document(n, v.as_document(), root));
  if (v.is_array()) {
    bson::array out;
    for (const auto& e : v.as_array()) {
      if (auto r = include_value(n, e, root)) out.push_back(std::move(*r));
    }
    return bson::value(std::move(out));
  }
  // A scalar has nothing to include, but computed fields make a document of it.
  if (n.has_computed) return bson::value(include_document(n, bson::document{}, root));
  return std::nullopt;
}

bson::document include_document(const node& n, const bson::document& d,
                                const bson::document& root) {
  bson::document out;
  for (const auto& f : d) {
    const node* child = n.find(f.name);
    if (child == nullptr) continue;
    switch (child->k) {
      case node::kind::include:
        out.append(f.name, f.val);
        break;
      case node::kind::tree:
        if (auto v = include_value(*child, f.val, root)) out.append(f.name, std::move(*v));
        break;
      case node::kind::slice:
      case node::kind::elem_match:
        if (auto v = operator_value(f.name, *child, f.val)) out.append(f.name, std::move(*v));
        break;
      case node::kind::computed:
      case node::kind::exclude:
        break;
    }
  }
  // Computed fields follow the included ones, in projection order.
  for (const auto& [name, child] : n.children) {
    if (child.k == node::kind::computed) {
      if (auto v = child.expr->evaluate(root)) out.set(name, std::move(*v));
    } else if (child.k == node::kind::tree && child.has_computed && !d.contains(name)) {
      out.append(name, include_document(child, bson::document{}, root));
    }
  }
  return out;
}

bson::document exclude_document(const node& n, const bson::document& d);

bson::value exclude_value(const node& n, const bson::value& v) {
  if (v.is_document()) return exclude_document(n, v.as_document());
  if (v.is_array()) {
    bson::array out;
    for (const auto& e : v.as_array())
      out.push_back(exclude_value(n, e));
    return out;
  }
  return v;
}

bson::document exclude_document(const node& n, const bson::document& d) {
  bson::document out;
  for (const auto& f : d) {
    const node* child = n.find(f.name);
    if (child == nullptr || child->k == node::kind::include) {
      out.append(f.name, f.val);
    } else if (child->k == node::kind::tree) {
      out.append(f.name, exclude_value(*child, f.val));
    } else if (child->k == node::kind::slice || child->k == node::kind::elem_match) {
      if (auto v = operator_value(f.name, *child, f.val)) out.append(f.name, std::move(*v));
    }
  }
  return out;
}

}  // namespace

expected<projection> projection::parse(const bson::document& spec, flavour f,
                                       const bson::document* let) {
  parser p{f, node{}, std::nullopt, false, false, false, false, let};
  for (const auto& field : spec) {
    if (field.name.empty()) return fail("FieldPath cannot be constructed with empty string", 40352);
    if (auto s = p.field(field.name, field.val); !s) return propagate(s.error());
  }
  // find's defaults when nothing says inclusion or exclusion.
  const bool inclusion = p.inclusion.value_or(p.id_included || (!p.has_slice && p.has_elem_match));
  if (inclusion && !p.id_specified) {
    node id;
    id.k = node::kind::include;
    p.root.children.insert(p.root.children.begin(), {"_id", std::move(id)});
  }
  projection out;
  out.root_ = std::make_shared<const node>(std::move(p.root));
  out.inclusion_ = inclusion;
  return out;
}

bson::document projection::apply(const bson::document& doc) const {
  if (inclusion_) return include_document(*root_, doc, doc);
  return exclude_document(*root_, doc);
}

expected<projection> parse_projection(const bson::document& spec) {
  return projection::parse(spec, projection::flavour::find);
}

bson::document apply(const projection& p, const bson::document& doc) {
  return p.apply(doc);
}

}  // namespace mongo_emulator::engine
