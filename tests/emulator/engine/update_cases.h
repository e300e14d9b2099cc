#pragma once
// Table-driven update tests: a document, an update (Extended JSON), and either the resulting
// document and change-stream updateDescription, or MongoDB's error code and message.

#include <optional>

#include "test_support.h"
#include "update.h"

namespace mongo_emulator::engine::testing {

struct update_case {
  const char* name;
  const char* before;
  const char* update;
  const char* after = nullptr;  // expected document; nullptr when an error is expected
  // {"updatedFields": {...}, "removedFields": [...]} (missing parts default to empty), or
  // "noop" for an update that changes nothing (no event, nModified 0), or "replace" for an
  // update MongoDB logs (and reports) as a replacement.
  const char* description = nullptr;
  int code = 0;
  const char* message = nullptr;  // exact error message, when given
  const char* filters = "[]";
  std::optional<std::size_t> positional = std::nullopt;
  bool inserting = false;
};

inline denormd::bson::document normalized_description(const denormd::bson::document& d) {
  auto part = [&](const char* name, denormd::bson::value fallback) {
    const auto* v = d.get(name);
    return v != nullptr ? *v : fallback;
  };
  return denormd::bson::document{
      {"updatedFields", part("updatedFields", denormd::bson::document{})},
      {"removedFields", part("removedFields", denormd::bson::array{})},
      {"truncatedArrays", part("truncatedArrays", denormd::bson::array{})}};
}

inline update_context fixed_context(std::optional<std::size_t> positional, bool inserting) {
  update_context ctx;
  ctx.positional = positional;
  ctx.inserting = inserting;
  ctx.now = denormd::bson::date_time{1700000000000};
  ctx.now_timestamp = denormd::bson::timestamp{1700000000, 7};
  return ctx;
}

inline void run_case(const update_case& c) {
  SCOPED_TRACE(c.name);
  // A pipeline-style update is given as a JSON array of stages.
  auto spec = c.update[0] == '[' ? parse_pipeline_update(array(c.update))
                                 : parse_update(doc(c.update), documents(c.filters));
  denormd::bson::document d = doc(c.before);
  const denormd::bson::document original = d;
  if (!spec) {
    ASSERT_NE(c.code, 0) << "unexpected parse error: " << spec.error().message;
    EXPECT_EQ(spec.error().code, c.code) << spec.error().message;
    if (c.message != nullptr) {
      EXPECT_EQ(spec.error().message, c.message);
    }
    return;
  }
  auto result = apply_update(*spec, d, fixed_context(c.positional, c.inserting));
  if (c.code != 0) {
    ASSERT_FALSE(result) << "expected error " << c.code << ", got " << json(d);
    EXPECT_EQ(result.error().code, c.code) << result.error().message;
    if (c.message != nullptr) {
      EXPECT_EQ(result.error().message, c.message);
    }
    EXPECT_EQ(json(d), json(original)) << "a failed update must leave the document untouched";
    return;
  }
  ASSERT_TRUE(result) << result.error().code << " " << result.error().message;
  ASSERT_NE(c.after, nullptr);
  EXPECT_EQ(json(d), json(doc(c.after)));
  if (c.description == nullptr) return;
  if (std::string_view(c.description) == "replace") {
    EXPECT_TRUE(result->replaced) << json(result->to_document());
  } else if (std::string_view(c.description) == "noop") {
    EXPECT_TRUE(result->empty()) << json(result->to_document());
    EXPECT_EQ(json(d), json(original));
  } else {
    EXPECT_FALSE(result->empty());
    EXPECT_EQ(json(result->to_document()), json(normalized_description(doc(c.description))));
  }
}

// Errors MongoDB reports while parsing the update, before looking at any document.
inline void expect_parse_error(const char* update, const char* filters, int code,
                               const char* message) {
  SCOPED_TRACE(update);
  auto spec = parse_update(doc(update), documents(filters));
  ASSERT_FALSE(spec) << "expected a parse error";
  EXPECT_EQ(spec.error().code, code) << spec.error().message;
  if (message != nullptr) {
    EXPECT_EQ(spec.error().message, message);
  }
}

}  // namespace mongo_emulator::engine::testing
