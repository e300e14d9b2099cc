#pragma once
// One computed field of a mapping: a MongoDB aggregation expression the mapping author wrote
// in `fields` (issue 33). Pure: validates the expression against the allowed subset, names
// the source paths it reads and gives its canonical text for the mapping fingerprint.
// denormd never evaluates it; the server does (docs/architecture.md, "Computed fields").

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bson/value.h"
#include "common/expected.h"
#include "mapping/spec_reader.h"

namespace denormd::mapping {

enum class operator_family {
  string,
  arithmetic,
  conditional,
  conversion,
  date,
  array,
  comparison,
  boolean,
  literal,
  variable,
};

std::string_view family_name(operator_family f);

// One operator a computed field may use. `arguments` names the keys of its named-argument
// object form ("" when it has none); `required` those of them it cannot do without;
// `named_only` when that object is its only form ($let; not $cond, which also takes an array).
struct expression_operator {
  std::string_view name;
  operator_family family;
  std::string_view arguments;  // space-separated
  std::string_view required;   // space-separated
  bool named_only;
};

// Every allowed operator, the one list docs and the JSON Schema are to be generated from.
std::span<const expression_operator> expression_operators();

// Objects and arrays nested in one expression, the expression itself being level 1. The
// server sends it inside an aggregate command ($project or $group, a pipeline, the command:
// some six levels more), and BSON allows 100; 50 leaves room and is far beyond what a field
// needs (one operator with an argument array is two levels).
inline constexpr int max_expression_depth = 50;

// Where a document read from a source carries the server's values of computed fields once
// they are evaluated: {"__denormd_computed": {"c<16 hex digits>": value, ...}}, one key per
// distinct expression. The loader refuses plain paths under it, so no user field is read from
// there (docs/architecture.md, "Computed fields").
inline constexpr std::string_view computed_root = "__denormd_computed";

// A problem in an expression: the JSON pointer of the offending part (below the expression's
// own pointer given to parse; the loader adds the file) and why.
struct expression_error {
  std::string pointer;
  std::string message;
};

class computed_expression {
 public:
  // Validates `expression` (at JSON pointer `pointer` of its file). Errors name the JSON
  // pointer of the offending part; all of them are collected, not just the first.
  static expected<computed_expression, std::vector<expression_error>> parse(
      const json& expression, const std::string& pointer);

  const json& expression() const { return expression_; }

  // True when the expression reads `$$ROOT` or `$$CURRENT` itself: any change may alter it.
  bool reads_whole_document() const { return whole_document_; }

  // The source paths it reads (dotted, no `$`), sorted, without duplicates and without a
  // path inside another listed one. Empty when reads_whole_document().
  const std::vector<std::string>& reads() const { return reads_; }

  // Compact JSON as written (key order kept: it is the author's and MongoDB's order).
  const std::string& canonical_text() const { return canonical_; }

  // The expression as BSON, as the server is sent it (Extended JSON values such as
  // {"$numberDecimal": "0.1"} read as the values they stand for).
  const bson::document& as_bson() const { return bson_; }

  // Its key under computed_root ("c" and 16 hex digits of the canonical text's hash: one
  // expression written in two mappings is evaluated once), and the path of its value there.
  const std::string& key() const { return key_; }
  const std::string& value_path() const { return value_path_; }

 private:
  computed_expression() = default;

  json expression_;
  bool whole_document_ = false;
  std::vector<std::string> reads_;
  std::string canonical_;
  bson::document bson_;
  std::string key_;
  std::string value_path_;
};

// Reads a computed field's expression at `pointer` of the file `r` reads, reporting every
// problem there; nullptr after a problem.
std::shared_ptr<const computed_expression> read_computed(spec_reader& r, const json& value,
                                                         const std::string& pointer);

// Why a plain field path may not be read ("" when it may): paths under computed_root hold
// computed values, which no user field may pose as.
std::string reserved_path_problem(std::string_view path);

}  // namespace denormd::mapping
