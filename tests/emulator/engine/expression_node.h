#pragma once
// The parsed form of an aggregation expression, shared by expression.cc (parsing, paths,
// variables) and the operator families (expression_support.h). Internal to the engine.

#include <string>
#include <utility>
#include <vector>

#include "expression.h"

namespace mongo_emulator::engine {

using maybe_value = std::optional<denormd::bson::value>;  // nullopt: missing

// One evaluation: the document ($$ROOT, $$CURRENT) and the variables bound around the node
// being evaluated ($map/$filter's `as`, $let's vars; innermost last).
struct evaluation {
  const denormd::bson::document& root;
  std::vector<std::pair<std::string, maybe_value>> bound;

  const maybe_value* lookup(const std::string& name) const;
};

// What parsing knows: the command's `let` constants and the names bound around this point.
struct parse_scope {
  const denormd::bson::document* let = nullptr;
  std::vector<std::string> bound;
};

struct expression::node {
  enum class kind { constant, field_path, root, variable, remove, object, array, op };
  kind k = kind::constant;
  denormd::bson::value constant;
  std::string name;                                        // variable; operator
  std::vector<std::string> path;                           // field_path; the rest after a variable
  std::vector<std::pair<std::string, expression>> fields;  // object
  std::vector<expression> items;   // array items; an operator's arguments (absent ones empty)
  std::vector<std::string> bound;  // variables the operator binds while evaluating its items
  maybe_value (*eval)(const node&, evaluation&) = nullptr;  // op
};

denormd::expected<expression> parse_expression(const denormd::bson::value& spec,
                                               parse_scope& scope);
maybe_value evaluate_in(const expression& e, evaluation& ev);

// Parses `{name: arg}` into `n` (kind op, eval set); 168 when `name` is not an operator the
// emulator implements.
denormd::status parse_operator(const std::string& name, const denormd::bson::value& arg,
                               parse_scope& scope, expression::node& n);

// MongoDB's rules for a user variable's name (16866, 16867, 16868).
denormd::status check_variable_name(const std::string& name);

}  // namespace mongo_emulator::engine
