#include "mapping/spec_reader.h"

#include <gtest/gtest.h>

namespace denormd::mapping {
namespace {

TEST(spec_reader_test, closest_name_ignores_case_and_stops_at_two_edits) {
  const std::vector<std::string_view> names = {"$toUpper", "$toLower", "$substrCP", "$subtract"};
  EXPECT_EQ(closest_name("$toupper", names), "$toUpper");
  EXPECT_EQ(closest_name("$substr", names), "$substrCP");
  EXPECT_EQ(closest_name("$toLowr", names), "$toLower");
  EXPECT_EQ(closest_name("$regexMatch", names), "");
  EXPECT_EQ(closest_name("x", {}), "");
}

TEST(spec_reader_test, an_unknown_key_names_the_closest_allowed_one) {
  std::vector<load_error> errors;
  spec_reader r("m.json", errors);
  const json j = json::parse(R"({"feilds": {}, "zzz": 1})");
  spec_object o(r, j, "", {"fields", "kind", "name"});
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].to_string(),
            "m.json: /feilds: unknown key \"feilds\" (did you mean \"fields\"?); allowed here: "
            "fields, kind, name");
  EXPECT_EQ(errors[1].to_string(),
            "m.json: /zzz: unknown key \"zzz\"; allowed here: fields, kind, name");
}

}  // namespace
}  // namespace denormd::mapping
