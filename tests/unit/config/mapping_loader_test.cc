#include "config/mapping_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace denormd::config {
namespace {

namespace fs = std::filesystem;
const fs::path source_dir = DENORMD_SOURCE_DIR;

std::string all_errors(const load_result& r) {
  std::string s;
  if (!r) {
    for (const auto& e : r.error())
      s += e.to_string() + "\n";
  }
  return s;
}

TEST(mapping_loader_test, accepts_the_sample_mappings) {
  auto r = load_mappings(source_dir / "mappings", "");
  ASSERT_TRUE(r.has_value()) << all_errors(r);
  ASSERT_EQ(r->size(), 6u);
  EXPECT_EQ(r->front().name, "customers-recent-orders");  // files load in name order
}

TEST(mapping_loader_test, reads_every_setting_of_a_copy_mapping) {
  auto r = load_mappings(source_dir / "mappings/orders-customer.json", "");
  ASSERT_TRUE(r.has_value()) << all_errors(r);
  const auto& m = r->front();
  EXPECT_EQ(m.kind, mapping::mapping_kind::copy);
  EXPECT_EQ(m.source, (mapping::ns{"shop", "customers"}));
  EXPECT_EQ(m.target, (mapping::ns{"shop", "orders"}));
  EXPECT_EQ(m.source_key, "_id");
  EXPECT_EQ(m.target_key, "customerId");
  ASSERT_TRUE(m.where.has_value());
  EXPECT_TRUE(m.fill_new_targets);
  EXPECT_EQ(m.on_source_delete, mapping::delete_policy::keep);
  ASSERT_EQ(m.fields.size(), 3u);
  EXPECT_EQ(m.fields[2].name, "city");
  EXPECT_EQ(m.fields[2].source_path, "address.city");
  EXPECT_EQ(m.target_path(m.fields[2]), "customer.city");
}

TEST(mapping_loader_test, recent_defaults_and_tie_breaker) {
  const std::string text = R"({"name":"r","kind":"recent",
    "source":{"collection":"reviews","parentKey":"productId"},
    "target":{"collection":"products"},"into":"recent",
    "fields":{"id":"_id","at":"createdAt"},"idField":"id","sort":{"at":-1},"limit":3})";
  auto r = parse_mapping("r.json", text, "shop");
  ASSERT_TRUE(r.has_value()) << all_errors(r);
  const auto& m = r->front();
  EXPECT_EQ(m.source.db, "shop");  // --db fills a missing db
  EXPECT_EQ(m.parent_field, "_id");
  EXPECT_EQ(m.on_source_delete, mapping::delete_policy::pull_and_refill);
  ASSERT_EQ(m.sort.size(), 2u);
  EXPECT_EQ(m.sort[1].name, "id");  // the id breaks ties
}

TEST(mapping_loader_test, extended_json_values_in_queries_are_values) {
  const std::string text = R"({"name":"c","kind":"copy","source":{"db":"s","collection":"a"},
    "target":{"db":"s","collection":"b","key":"aId",
      "where":{"createdAt":{"$gte":{"$date":"2024-01-01T00:00:00Z"}},"owner":{"$oid":"65f000000000000000000001"}}},
    "fields":{"x":"x"}})";
  auto r = parse_mapping("c.json", text, "");
  ASSERT_TRUE(r.has_value()) << all_errors(r);
}

TEST(mapping_loader_test, missing_folder_and_empty_folder_are_errors) {
  auto missing = load_mappings(source_dir / "no-such-folder", "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(all_errors(missing).find("neither a mapping file nor a folder"), std::string::npos);
  const fs::path empty = fs::temp_directory_path() / "denormd-empty-mappings";
  fs::create_directories(empty);
  auto none = load_mappings(empty, "");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(all_errors(none).find("holds no mapping files"), std::string::npos);
}

// Every folder in tests/invalid_mappings must fail to load with each line of its error.txt
// appearing in the messages.
class invalid_mapping_test : public ::testing::TestWithParam<std::string> {};

TEST_P(invalid_mapping_test, is_rejected_with_a_precise_message) {
  const fs::path dir = source_dir / "tests/invalid_mappings" / GetParam();
  auto r = load_mappings(dir, "");
  ASSERT_FALSE(r.has_value()) << "loaded without error";
  const std::string errors = all_errors(r);
  std::ifstream expected(dir / "error.txt");
  std::string line;
  int checked = 0;
  while (std::getline(expected, line)) {
    if (line.empty()) continue;
    ++checked;
    EXPECT_NE(errors.find(line), std::string::npos) << "expected: " << line << "\ngot:\n" << errors;
  }
  EXPECT_GT(checked, 0);
}

std::vector<std::string> invalid_cases() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(source_dir / "tests/invalid_mappings")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(cases, invalid_mapping_test, ::testing::ValuesIn(invalid_cases()),
                         [](const auto& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace denormd::config
