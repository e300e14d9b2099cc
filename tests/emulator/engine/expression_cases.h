#pragma once
// Helpers for the aggregation expression tests: an expression (Extended JSON) evaluated against
// a document, its value as canonical JSON, or MongoDB's error code and message.

#include <string>
#include <utility>

#include "expression.h"
#include "test_support.h"

namespace mongo_emulator::engine::testing {

// The value of `expr` (JSON) for `input`, as canonical JSON, or "missing".
inline std::string eval(const char* expr, const char* input = "{}",
                        const denormd::bson::document* let = nullptr) {
  auto e = expression::parse(
      denormd::bson::value(doc(std::string(R"({"e": )") + expr + "}").fields()[0].val), let);
  EXPECT_TRUE(e) << expr << ": " << (e ? "" : e.error().message);
  if (!e) return "parse error";
  auto v = e->evaluate(doc(input));
  if (!v) return "missing";
  return json(denormd::bson::document{{"v", *v}});
}

// A JSON value as eval() shows it.
inline std::string v(const char* json_value) {
  return json(doc(std::string(R"({"v": )") + json_value + "}"));
}

inline void expect_parse_error(const char* expr, int code) {
  SCOPED_TRACE(expr);
  auto e = expression::parse(doc(std::string(R"({"e": )") + expr + "}").fields()[0].val);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, code) << e.error().message;
}

// The parse error's message (empty when it parses).
inline std::string parse_error_message(const char* expr) {
  auto e = expression::parse(doc(std::string(R"({"e": )") + expr + "}").fields()[0].val);
  return e ? std::string() : e.error().message;
}

// The code of the run-time error, and its message.
inline std::pair<int, std::string> run_error(const char* expr, const char* input = "{}") {
  auto e = expression::parse(doc(std::string(R"({"e": )") + expr + "}").fields()[0].val);
  EXPECT_TRUE(e) << expr;
  if (!e) return {0, ""};
  try {
    (void)e->evaluate(doc(input));
  } catch (const expression_error& err) {
    return {err.code(), err.what()};
  }
  return {0, "no error"};
}

}  // namespace mongo_emulator::engine::testing
