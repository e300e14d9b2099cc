#pragma once
// MongoDB's aggregation expressions as the emulator evaluates them: field paths ("$a.b", arrays
// traversed), $$ROOT / $$CURRENT / $$REMOVE, user variables ($let, $map/$filter's `as`, a
// command's `let`), {$literal: v}, constants, documents and arrays of expressions, and the
// operators of expression_operators.cc and its families (expression_support.h). Any other
// operator is rejected at parse time with MongoDB's code (168 InvalidPipelineOperator).
// Lifecycle: parsed once, immutable; safe to share.

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class expression {
 public:
  struct node;

  expression() = default;
  explicit expression(std::shared_ptr<const node> n) : root_(std::move(n)) {}

  // `let`: the command's `let` variables (constants from evaluate_let), readable as `$$name`.
  static denormd::expected<expression> parse(const denormd::bson::value& spec,
                                             const denormd::bson::document* let = nullptr);
  // A constant (a non-string, non-document, non-array value).
  static expression constant(denormd::bson::value v);

  // The value for `root`, or nullopt when it is missing (the field is then left out). Throws
  // expression_error for what fails at run time on MongoDB too ($size of a string).
  std::optional<denormd::bson::value> evaluate(const denormd::bson::document& root) const;

  // The parsed tree; null for a default-constructed (absent) expression.
  const node* tree() const { return root_.get(); }

 private:
  std::shared_ptr<const node> root_;
};

// A run-time error of an expression, with MongoDB's code and message. Thrown because some
// callers cannot return one (a $expr inside a query predicate, whose matches() is a bool);
// command handlers turn it back into a value with catch_expression_errors.
class expression_error : public std::runtime_error {
 public:
  expression_error(std::string message, int code)
      : std::runtime_error(std::move(message)), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Runs `f` (returning an expected), turning an expression_error it throws into that error.
template <class F>
auto catch_expression_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const expression_error& e) {
    return denormd::fail(e.what(), e.code());
  }
}

// How $expr, $cond, $and, $or and $not read a value: false, null, undefined, missing and
// numeric zero are false; everything else (empty strings and arrays too) is true.
bool truthy(const std::optional<denormd::bson::value>& v);

// A command's `let` option: each variable's expression evaluated once, with no document.
// Names follow MongoDB's rules for user variables; errors carry MongoDB's codes.
denormd::expected<denormd::bson::document> evaluate_let(const denormd::bson::value* let);

// Validates a field path as MongoDB's FieldPath does ("a.b"; no empty parts, no leading `$`).
denormd::status check_field_path(const std::string& path);

// The value at an aggregation field path: arrays are traversed element by element, documents
// inside them contribute, other elements are skipped.
std::optional<denormd::bson::value> value_at_path(const denormd::bson::value& v,
                                                  const std::vector<std::string>& parts,
                                                  std::size_t from = 0);

}  // namespace mongo_emulator::engine
