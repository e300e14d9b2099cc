// $toHashedIndexKey, as MongoDB's ExpressionToHashedIndexKey (expression.cpp) computes it: the
// key a hashed index stores for its operand (denormd::bson::hashed_index_key), a NumberLong.
// Its argument is one operand (parseOperand: an array literal is one array value, not an
// argument list, so there are no arity errors); missing hashes as null; every type hashes, so
// it raises no run-time error either.

#include "bson/hashed_key.h"
#include "expression_support.h"

namespace mongo_emulator::engine::ops {

namespace bson = denormd::bson;

namespace {

denormd::status parse_operand(const op_spec&, const bson::value& arg, parse_scope& scope, node& n) {
  return add_item(arg, scope, n);
}

maybe_value eval_to_hashed_index_key(const node& n, evaluation& ev) {
  const maybe_value v = arg(n, 0, ev);
  return bson::value(bson::hashed_index_key(v ? *v : bson::value{}));
}

const op_spec table[] = {
    {"$toHashedIndexKey", parse_operand, eval_to_hashed_index_key},
};

}  // namespace

std::span<const op_spec> hash_operators() {
  return table;
}

}  // namespace mongo_emulator::engine::ops
