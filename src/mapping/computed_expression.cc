#include "mapping/computed_expression.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <set>
#include <unordered_set>

#include "bson/json.h"
#include "common/fnv.h"

namespace denormd::mapping {

namespace {

using F = operator_family;

// Issue 33, item 5: what the test server evaluates with MongoDB 6.0's semantics.
constexpr std::array<expression_operator, 49> operators = {{
    {"$concat", F::string, "", "", false},
    {"$toUpper", F::string, "", "", false},
    {"$toLower", F::string, "", "", false},
    {"$trim", F::string, "input chars", "input", true},
    {"$ltrim", F::string, "input chars", "input", true},
    {"$rtrim", F::string, "input chars", "input", true},
    {"$substrCP", F::string, "", "", false},
    {"$split", F::string, "", "", false},
    {"$strLenCP", F::string, "", "", false},
    {"$add", F::arithmetic, "", "", false},
    {"$subtract", F::arithmetic, "", "", false},
    {"$multiply", F::arithmetic, "", "", false},
    {"$divide", F::arithmetic, "", "", false},
    {"$mod", F::arithmetic, "", "", false},
    {"$abs", F::arithmetic, "", "", false},
    {"$round", F::arithmetic, "", "", false},
    {"$trunc", F::arithmetic, "", "", false},
    {"$cond", F::conditional, "if then else", "if then else", false},
    {"$ifNull", F::conditional, "", "", false},
    {"$switch", F::conditional, "branches default", "branches", true},
    {"$toString", F::conversion, "", "", false},
    {"$toInt", F::conversion, "", "", false},
    {"$toLong", F::conversion, "", "", false},
    {"$toDouble", F::conversion, "", "", false},
    {"$toDecimal", F::conversion, "", "", false},
    {"$toBool", F::conversion, "", "", false},
    {"$convert", F::conversion, "input to onError onNull", "input to", true},
    {"$dateToString", F::date, "date format timezone onNull", "date", true},
    {"$year", F::date, "date timezone", "date", false},
    {"$month", F::date, "date timezone", "date", false},
    {"$dayOfMonth", F::date, "date timezone", "date", false},
    {"$size", F::array, "", "", false},
    {"$arrayElemAt", F::array, "", "", false},
    {"$filter", F::array, "input as cond limit", "input cond", true},
    {"$map", F::array, "input as in", "input in", true},
    {"$reduce", F::array, "input initialValue in", "input initialValue in", true},
    {"$in", F::array, "", "", false},
    {"$eq", F::comparison, "", "", false},
    {"$ne", F::comparison, "", "", false},
    {"$gt", F::comparison, "", "", false},
    {"$gte", F::comparison, "", "", false},
    {"$lt", F::comparison, "", "", false},
    {"$lte", F::comparison, "", "", false},
    {"$cmp", F::comparison, "", "", false},
    {"$and", F::boolean, "", "", false},
    {"$or", F::boolean, "", "", false},
    {"$not", F::boolean, "", "", false},
    {"$literal", F::literal, "", "", false},
    {"$let", F::variable, "vars in", "vars in", true},
}};

const expression_operator* find_operator(std::string_view name) {
  for (const auto& op : operators) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// The words of a space-separated list.
std::vector<std::string_view> words(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const auto space = list.find(' ');
    out.push_back(list.substr(0, space));
    if (space == std::string_view::npos) break;
    list.remove_prefix(space + 1);
  }
  return out;
}

bool is_javascript(std::string_view k) {
  return k == "$function" || k == "$accumulator" || k == "$where" || k == "$code";
}

bool is_nondeterministic(std::string_view k) {
  return k == "$rand" || k == "$sampleRate";
}

// Aggregation stage names (MongoDB 6.0 and Atlas): a field holds one expression, never a stage.
bool is_stage(std::string_view k) {
  static const std::set<std::string_view> stages = {"$addFields",
                                                    "$bucket",
                                                    "$bucketAuto",
                                                    "$changeStream",
                                                    "$collStats",
                                                    "$count",
                                                    "$currentOp",
                                                    "$densify",
                                                    "$documents",
                                                    "$facet",
                                                    "$fill",
                                                    "$geoNear",
                                                    "$graphLookup",
                                                    "$group",
                                                    "$indexStats",
                                                    "$limit",
                                                    "$listLocalSessions",
                                                    "$listSessions",
                                                    "$lookup",
                                                    "$match",
                                                    "$merge",
                                                    "$out",
                                                    "$planCacheStats",
                                                    "$project",
                                                    "$redact",
                                                    "$replaceRoot",
                                                    "$replaceWith",
                                                    "$sample",
                                                    "$search",
                                                    "$searchMeta",
                                                    "$set",
                                                    "$setWindowFields",
                                                    "$skip",
                                                    "$sort",
                                                    "$sortByCount",
                                                    "$unionWith",
                                                    "$unset",
                                                    "$unwind",
                                                    "$vectorSearch"};
  return stages.contains(k);
}

// MongoDB's rule for names a user binds: a lowercase ASCII letter or a non-ASCII byte first,
// then letters, digits, '_' or non-ASCII bytes.
bool valid_variable_name(std::string_view name) {
  if (name.empty()) return false;
  const auto c0 = static_cast<unsigned char>(name[0]);
  if (!((c0 >= 'a' && c0 <= 'z') || c0 >= 0x80)) return false;
  return std::all_of(name.begin() + 1, name.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
  });
}

// The pointer of the first object or array nested deeper than the bound, or nullopt. Run
// before the walk, so the walk (and this, stopping at the bound) recurses a bounded depth.
std::optional<std::string> too_deep(const json& j, const std::string& at, int depth) {
  if (!j.is_object() && !j.is_array()) return std::nullopt;
  if (depth > max_expression_depth) return at;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (auto p = too_deep(it.value(), pointer_join(at, it.key()), depth + 1)) return p;
    }
  } else {
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (auto p = too_deep(j[i], pointer_join(at, std::to_string(i)), depth + 1)) return p;
    }
  }
  return std::nullopt;
}

constexpr const char* not_deterministic =
    " is not deterministic: a computed field must give the same value for the same document "
    "every time";
constexpr const char* variable_name_rule =
    " (a lowercase letter first, then letters, digits or '_')";

// Walks one expression: reports errors and collects the paths it reads.
class walker {
 public:
  explicit walker(std::vector<expression_error>& errors) : errors_(errors) {}

  void expression(const json& j, const std::string& at) {
    if (j.is_string()) {
      const auto& s = j.get_ref<const std::string&>();
      if (s.starts_with("$$")) {
        variable(s, at);
      } else if (s.starts_with('$')) {
        field_path(s, at);
      }
    } else if (j.is_array()) {
      for (std::size_t i = 0; i < j.size(); ++i) {
        expression(j[i], pointer_join(at, std::to_string(i)));
      }
    } else if (j.is_object()) {
      object(j, at);
    }
  }

  bool whole_document_ = false;
  std::vector<std::string> paths_;

 private:
  void error(const std::string& at, std::string message) {
    errors_.push_back({at, std::move(message)});
  }

  void object(const json& j, const std::string& at) {
    std::vector<std::string_view> operators_here;
    std::string_view plain;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key().starts_with('$')) {
        operators_here.push_back(it.key());
      } else if (plain.empty()) {
        plain = it.key();
      }
    }
    if (operators_here.empty()) {  // an object literal: its values are expressions
      for (auto it = j.begin(); it != j.end(); ++it) {
        expression(it.value(), pointer_join(at, it.key()));
      }
      return;
    }
    if (!plain.empty()) {
      error(at, "mixes the operator " + std::string(operators_here.front()) +
                    " with the plain field \"" + std::string(plain) +
                    "\": an expression object has exactly one $-key and an object literal none");
      return;
    }
    if (operators_here.size() > 1) {
      error(at, "has " + std::to_string(operators_here.size()) + " operators (" +
                    std::string(operators_here[0]) + ", " + std::string(operators_here[1]) +
                    "...): an expression object has exactly one");
      return;
    }
    const std::string& name = j.begin().key();
    const json& arg = j.begin().value();
    const std::string here = pointer_join(at, name);
    if (is_extended_json_key(name) && !is_javascript(name)) {
      return;  // a typed constant ({"$numberDecimal": "1.19"}): data
    }
    operator_call(name, arg, here);
  }

  // The allowed operator `name`, or nullptr after saying why it is refused.
  const expression_operator* allowed(const std::string& name, const std::string& here) {
    if (is_javascript(name)) {
      error(here, "server-side JavaScript (" + name + ") is not allowed in computed fields");
      return nullptr;
    }
    if (is_nondeterministic(name)) {
      error(here, name + not_deterministic);
      return nullptr;
    }
    if (is_stage(name)) {
      error(here, name +
                      " is an aggregation stage, not an expression: a computed field is "
                      "one expression over its own document");
      return nullptr;
    }
    const expression_operator* op = find_operator(name);
    if (op == nullptr) {
      std::vector<std::string_view> names;
      for (const auto& o : operators)
        names.push_back(o.name);
      std::string msg = "operator " + name + " is not allowed in computed fields";
      if (auto best = closest_name(name, names); !best.empty()) {
        msg += " (did you mean " + best + "?)";
      }
      error(here, msg);
    }
    return op;
  }

  void operator_call(const std::string& name, const json& arg, const std::string& here) {
    const expression_operator* op = allowed(name, here);
    if (op == nullptr || op->family == F::literal) return;  // $literal's is data, never looked into
    // An object without operator keys is the named-argument form ({"if": ..., "then": ...}).
    const bool named_form = !op->arguments.empty() && arg.is_object() &&
                            (arg.empty() || !arg.begin().key().starts_with('$'));
    if (named_form) {
      if (named_arguments(*op, arg, here)) named_call(name, arg, here);
    } else if (op->named_only) {
      error(here, name + " takes an object of named arguments (" + std::string(op->arguments) +
                      "), not " + json_type(arg));
    } else {
      expression(arg, here);
    }
  }

  // The arguments of a named-argument object, in the scope each is evaluated in.
  void named_call(const std::string& name, const json& arg, const std::string& here) {
    const auto at = [&](std::string_view key) { return pointer_join(here, key); };
    if (name == "$let") {
      let_call(arg, here);
    } else if (name == "$map" || name == "$filter") {
      iteration_call(name, arg, here);
    } else if (name == "$reduce") {
      expression(arg["input"], at("input"));
      expression(arg["initialValue"], at("initialValue"));
      in_scope({"this", "value"}, arg["in"], at("in"));
    } else if (name == "$switch") {
      branches(arg["branches"], at("branches"));
      if (arg.contains("default")) expression(arg["default"], at("default"));
    } else {
      for (auto it = arg.begin(); it != arg.end(); ++it) {
        expression(it.value(), at(it.key()));
      }
    }
  }

  // $let: each of `vars` in the enclosing scope, `in` with them bound.
  void let_call(const json& arg, const std::string& here) {
    const std::string vars_at = pointer_join(here, "vars");
    const json& vars = arg["vars"];
    if (!vars.is_object()) {
      error(vars_at, "must be an object of variables, not " + json_type(vars));
      return;
    }
    std::vector<std::string> bound;
    for (auto it = vars.begin(); it != vars.end(); ++it) {
      const std::string var_at = pointer_join(vars_at, it.key());
      if (!valid_variable_name(it.key())) {
        error(var_at, "\"" + it.key() + "\" is not a valid variable name" + variable_name_rule);
      }
      expression(it.value(), var_at);
      bound.push_back(it.key());
    }
    in_scope(bound, arg["in"], pointer_join(here, "in"));
  }

  // $map and $filter: `input` and `limit` in the enclosing scope, `in`/`cond` with `as`
  // (default "this") bound.
  void iteration_call(const std::string& name, const json& arg, const std::string& here) {
    const auto at = [&](std::string_view key) { return pointer_join(here, key); };
    expression(arg["input"], at("input"));
    if (arg.contains("limit")) expression(arg["limit"], at("limit"));
    std::string as = "this";
    if (arg.contains("as")) {
      const json& v = arg["as"];
      if (!v.is_string() || !valid_variable_name(v.get_ref<const std::string&>())) {
        error(at("as"),
              "must name a variable" + std::string(variable_name_rule) + ", not " + v.dump());
        return;
      }
      as = v.get<std::string>();
    }
    const char* body = name == "$map" ? "in" : "cond";
    in_scope({as}, arg[body], at(body));
  }

  // Keys of a named-argument object: known, and the required ones present.
  bool named_arguments(const expression_operator& op, const json& arg, const std::string& here) {
    const auto allowed = words(op.arguments);
    bool ok = true;
    for (auto it = arg.begin(); it != arg.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
        std::string msg = std::string(op.name) + " has no argument \"" + it.key() + "\"";
        if (auto best = closest_name(it.key(), allowed); !best.empty()) {
          msg += " (did you mean \"" + best + "\"?)";
        }
        error(pointer_join(here, it.key()), msg + "; its arguments: " + std::string(op.arguments));
        ok = false;
      }
    }
    for (const auto key : words(op.required)) {
      if (!arg.contains(key)) {
        error(pointer_join(here, key),
              std::string(op.name) + " requires the argument \"" + std::string(key) + "\"");
        ok = false;
      }
    }
    return ok;
  }

  void branches(const json& j, const std::string& at) {
    if (!j.is_array()) {
      error(at, "must be an array of {case, then} objects, not " + json_type(j));
      return;
    }
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string here = pointer_join(at, std::to_string(i));
      const json& b = j[i];
      if (!b.is_object() || b.size() != 2 || !b.contains("case") || !b.contains("then")) {
        error(here, "a $switch branch is an object {\"case\": ..., \"then\": ...}");
        continue;
      }
      expression(b["case"], pointer_join(here, "case"));
      expression(b["then"], pointer_join(here, "then"));
    }
  }

  void in_scope(const std::vector<std::string>& names, const json& body, const std::string& at) {
    scope_.insert(scope_.end(), names.begin(), names.end());
    expression(body, at);
    scope_.resize(scope_.size() - names.size());
  }

  void field_path(const std::string& s, const std::string& at) {
    const std::string path = s.substr(1);
    if (auto problem = path_problem(path); !problem.empty()) {
      error(at, "\"" + s + "\" is not a valid field path: it " + problem);
      return;
    }
    paths_.push_back(path);
  }

  void variable(const std::string& s, const std::string& at) {
    const std::string_view rest = std::string_view(s).substr(2);
    const auto dot = rest.find('.');
    const std::string name(rest.substr(0, dot));
    std::string path;
    if (dot != std::string_view::npos) {
      path = rest.substr(dot + 1);
      if (auto problem = path_problem(path); !problem.empty()) {
        error(at, "\"" + s + "\" is not a valid field path: it " + problem);
        return;
      }
    }
    if (name == "ROOT" || name == "CURRENT") {
      if (path.empty()) {
        whole_document_ = true;
      } else {
        paths_.push_back(path);
      }
      return;
    }
    if (name == "REMOVE" || std::find(scope_.begin(), scope_.end(), name) != scope_.end()) {
      return;  // bound by the expression itself: reads no source path of its own
    }
    if (name == "NOW" || name == "CLUSTER_TIME") {
      error(at, "$$" + name + not_deterministic);
      return;
    }
    std::vector<std::string_view> defined = {"ROOT", "CURRENT", "REMOVE"};
    defined.insert(defined.end(), scope_.begin(), scope_.end());
    std::string msg = "\"" + s + "\" uses the undefined variable $$" + name;
    if (auto best = closest_name(name, defined); !name.empty() && !best.empty()) {
      msg += " (did you mean $$" + best + "?)";
    }
    error(at, msg +
                  "; defined here: $$ROOT, $$CURRENT, $$REMOVE and those bound by an "
                  "enclosing $let, $map, $filter or $reduce");
  }

  std::vector<expression_error>& errors_;
  std::vector<std::string> scope_;  // variables bound by enclosing operators, innermost last
};

// Sorted, unique, and no path inside another kept one: reading `a` covers `a.b`.
std::vector<std::string> fold_paths(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  // A parent sorts before every path under it, so it is kept (or folded) first. `kept` views
  // into `paths`, which no longer changes.
  std::unordered_set<std::string_view> kept;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    bool covered = false;
    for_each_parent(p,
                    [&](std::string_view parent) { covered = covered || kept.contains(parent); });
    if (covered) continue;
    kept.insert(p);
    out.push_back(p);
  }
  return out;
}

}  // namespace

std::string_view family_name(operator_family f) {
  switch (f) {
    case F::string:
      return "string";
    case F::arithmetic:
      return "arithmetic";
    case F::conditional:
      return "conditional";
    case F::conversion:
      return "conversion";
    case F::date:
      return "date";
    case F::array:
      return "array";
    case F::comparison:
      return "comparison";
    case F::boolean:
      return "boolean";
    case F::literal:
      return "literal";
    case F::variable:
      return "variable";
  }
  return "";
}

std::span<const expression_operator> expression_operators() {
  return operators;
}

expected<computed_expression, std::vector<expression_error>> computed_expression::parse(
    const json& expression, const std::string& pointer) {
  std::vector<expression_error> errors;
  if (!expression.is_object()) {
    errors.push_back(
        {pointer, "a computed field is one expression object, not " + json_type(expression)});
    return errors;
  }
  if (auto deep = too_deep(expression, pointer, 1)) {
    errors.push_back({*deep, "the expression nests objects and arrays deeper than " +
                                 std::to_string(max_expression_depth) +
                                 " levels (the limit of computed fields)"});
    return errors;
  }
  walker w(errors);
  w.expression(expression, pointer);
  if (!errors.empty()) return errors;
  computed_expression out;
  out.expression_ = expression;
  out.whole_document_ = w.whole_document_;
  if (!out.whole_document_) out.reads_ = fold_paths(std::move(w.paths_));
  out.canonical_ = expression.dump();
  auto as_bson = bson::parse_json(out.canonical_);
  if (!as_bson) {
    errors.push_back({pointer, "the expression holds a value that is not valid Extended JSON: " +
                                   as_bson.error().message});
    return errors;
  }
  out.bson_ = std::move(as_bson).value();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(out.canonical_)));
  out.key_ = std::string("c") + hex;
  out.value_path_ = std::string(computed_root) + "." + out.key_;
  return out;
}

std::shared_ptr<const computed_expression> read_computed(spec_reader& r, const json& value,
                                                         const std::string& pointer) {
  auto parsed = computed_expression::parse(value, pointer);
  if (!parsed) {
    for (const auto& e : parsed.error())
      r.error(e.pointer, e.message);
    return nullptr;
  }
  for (const auto& path : parsed->reads()) {
    if (auto problem = reserved_path_problem(path); !problem.empty()) {
      r.error(pointer, "the expression reads \"$" + path + "\", which " + problem);
      return nullptr;
    }
  }
  return std::make_shared<const computed_expression>(std::move(parsed).value());
}

std::string reserved_path_problem(std::string_view path) {
  if (path.substr(0, path.find('.')) != computed_root) return "";
  return "is under \"" + std::string(computed_root) +
         "\", where denormd keeps computed values (write an expression instead)";
}

}  // namespace denormd::mapping
