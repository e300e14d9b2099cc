#pragma once
// MongoDB's regular-expression query predicate ($regex, a regex literal in a filter, a regex in
// $in/$nin/$all) over std::regex. MongoDB matches with PCRE; this is std::regex ECMAScript with
// the pattern translated where the two differ and refused (238) where it cannot be:
// - options i m s x u as MongoDB takes them (others: 51108); `s` turns `.` outside classes into
//   `[\s\S]`, `x` drops unescaped whitespace and `#` comments outside classes, and without `m`
//   a `$` matches at the end or before a final newline, as in PCRE;
// - PCRE-only syntax is refused with 238 naming it: lookbehind, named groups, inline options,
//   atomic groups, possessive quantifiers, `\A \Z \z \G \K \Q \E \h \R \p \X` and the like;
// - other patterns std::regex rejects fail like an invalid pattern on MongoDB (51091);
// - matching is by byte, not by UTF-8 code point: `.` and `i` differ from MongoDB's on
//   non-ASCII text.
// Immutable once compiled; safe to share between threads.

#include <memory>
#include <regex>
#include <string>

#include "bson/value.h"
#include "common/expected.h"

namespace mongo_emulator::engine {

class query_regex {
 public:
  static denormd::expected<query_regex> compile(const denormd::bson::regex& source);

  // RegexMatchExpression::matchesSingleElement: a string or symbol the pattern finds a match
  // in, or a regex value with the same pattern and options. Throws expression_error (238) when
  // std::regex gives up on an input (its recursion or complexity limit).
  bool matches(const denormd::bson::value& v) const;
  const denormd::bson::regex& source() const { return source_; }

 private:
  denormd::bson::regex source_;
  std::shared_ptr<const std::regex> re_;
};

}  // namespace mongo_emulator::engine
