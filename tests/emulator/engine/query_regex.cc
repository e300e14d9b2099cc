#include "query_regex.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "expression.h"

namespace mongo_emulator::engine {

namespace bson = denormd::bson;
using denormd::expected;
using denormd::fail;

namespace {

constexpr int not_implemented = 238;
constexpr int invalid_flag = 51108;
constexpr int invalid_regex = 51091;

expected<std::string> unsupported(std::string_view construct, const std::string& pattern) {
  return fail("mongo-emulator does not implement the PCRE construct '" + std::string(construct) +
                  "' in regular expression /" + pattern +
                  "/ (its regexes are std::regex ECMAScript). It is refused rather than "
                  "matched differently (see tests/emulator/README.md).",
              not_implemented);
}

// Letters an ECMAScript escape accepts; PCRE's other letter escapes mean something else there.
bool ecmascript_escape(char c) {
  return std::string_view("dDwWsSbBfnrtv0cxu").find(c) != std::string_view::npos ||
         (c >= '1' && c <= '9') || !std::isalnum(static_cast<unsigned char>(c));
}

// Whether the `{` at `i` starts a quantifier (`{n}`, `{n,}`, `{n,m}`).
bool is_quantifier_brace(const std::string& p, std::size_t i) {
  std::size_t j = i + 1;
  const auto digits = [&] {
    const std::size_t from = j;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j])))
      ++j;
    return j > from;
  };
  if (!digits()) return false;
  if (j < p.size() && p[j] == ',') {
    ++j;
    digits();
  }
  return j < p.size() && p[j] == '}';
}

// Rewrites a PCRE pattern as the ECMAScript pattern that matches the same strings, for the
// syntax both share; refuses what only PCRE has.
expected<std::string> to_ecmascript(const std::string& p, bool dotall, bool extended,
                                    bool multiline) {
  std::string out;
  out.reserve(p.size() + 8);
  bool in_class = false;
  bool class_start = false;       // just after `[` or `[^`: a `]` here is a literal
  bool after_quantifier = false;  // `+` here would make it possessive
  bool in_braces = false;         // inside a `{n,m}` quantifier
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    const bool was_quantified = after_quantifier;
    after_quantifier = false;
    if (c == '\\') {
      if (i + 1 == p.size())
        return fail("Regular expression is invalid: \\ at end of pattern", invalid_regex);
      const char e = p[++i];
      if (!ecmascript_escape(e)) return unsupported(std::string("\\") + e, p);
      if (e == 'x' && i + 1 < p.size() && p[i + 1] == '{') return unsupported("\\x{...}", p);
      out += '\\';
      out += e;
      class_start = false;
      continue;
    }
    if (in_class) {
      if (c == ']' && !class_start) {
        in_class = false;
        out += c;
      } else if (c == ']') {
        out += "\\]";  // PCRE's `[]a]`; ECMAScript would read `[]` as an empty class
      } else if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
        const auto end = p.find(":]", i + 2);  // a POSIX class, which both know
        if (end == std::string::npos) {
          out += c;
        } else {
          out += p.substr(i, end + 2 - i);
          i = end + 1;
        }
      } else {
        out += c;
      }
      class_start = false;
      continue;
    }
    if (extended && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')) {
      after_quantifier = was_quantified;
      continue;
    }
    if (extended && c == '#') {
      while (i + 1 < p.size() && p[i + 1] != '\n')
        ++i;
      after_quantifier = was_quantified;
      continue;
    }
    switch (c) {
      case '[':
        in_class = true;
        class_start = true;
        out += c;
        if (i + 1 < p.size() && p[i + 1] == '^') {
          out += '^';
          ++i;
        }
        break;
      case '(':
        if (i + 1 < p.size() && p[i + 1] == '?') {
          const char kind = i + 2 < p.size() ? p[i + 2] : '\0';
          if (kind != ':' && kind != '=' && kind != '!')
            return unsupported(p.substr(i, std::min<std::size_t>(4, p.size() - i)), p);
        }
        out += c;
        break;
      case '.':
        out += dotall ? "[\\s\\S]" : ".";
        break;
      case '$':
        // PCRE's `$` without `m` also matches before a newline that ends the subject.
        out += multiline ? "$" : "(?=\\n?$)";
        break;
      case '+':
        if (was_quantified) return unsupported(p.substr(i - 1, 2), p);
        out += c;
        after_quantifier = true;
        break;
      case '*':
      case '?':
        out += c;
        after_quantifier = c == '*' || !was_quantified;  // `x??` is lazy, not quantified again
        break;
      case '{':
        if (is_quantifier_brace(p, i)) {
          in_braces = true;
          out += c;
        } else {
          out += "\\{";  // PCRE reads a `{` that starts no quantifier as itself
        }
        break;
      case '}':
        if (in_braces) {
          in_braces = false;
          out += c;
          after_quantifier = true;
        } else {
          out += "\\}";
        }
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

expected<query_regex> query_regex::compile(const bson::regex& source) {
  bool icase = false;
  bool multiline = false;
  bool dotall = false;
  bool extended = false;
  for (const char flag : source.options) {
    switch (flag) {
      case 'i':
        icase = true;
        break;
      case 'm':
        multiline = true;
        break;
      case 's':
        dotall = true;
        break;
      case 'x':
        extended = true;
        break;
      case 'u':
        break;
      default:
        // MongoDB's pcre_util names the operator first; a match expression has none.
        return fail(std::string(" invalid flag in regex options: ") + flag, invalid_flag);
    }
  }
  auto pattern = to_ecmascript(source.pattern, dotall, extended, multiline);
  if (!pattern) return pattern.error();
  auto flags = std::regex::ECMAScript;
  if (icase) flags |= std::regex::icase;
  if (multiline) flags |= std::regex::multiline;
  query_regex out;
  out.source_ = source;
  try {
    out.re_ = std::make_shared<const std::regex>(*pattern, flags);
  } catch (const std::regex_error& e) {
    return fail("Regular expression is invalid: " + std::string(e.what()), invalid_regex);
  }
  return out;
}

bool query_regex::matches(const bson::value& v) const {
  const std::string* text = nullptr;
  if (v.is_string()) {
    text = &v.as_string();
  } else if (v.is<bson::symbol>()) {
    text = &v.as<bson::symbol>().text;
  } else {
    return v.is<bson::regex>() && v.as<bson::regex>() == source_;
  }
  try {
    return std::regex_search(*text, *re_);
  } catch (const std::regex_error& e) {
    throw expression_error("mongo-emulator's std::regex could not match /" + source_.pattern +
                               "/ against a string of " + std::to_string(text->size()) +
                               " bytes: " + e.what(),
                           not_implemented);
  }
}

}  // namespace mongo_emulator::engine
