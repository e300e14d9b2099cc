#include "config/mapping_loader.h"

#include <gtest/gtest.h>

#include <unistd.h>
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
  ASSERT_EQ(r->size(), 8u);
  EXPECT_EQ(r->front().name, "customers-recent-orders");  // files load in name order
}

TEST(mapping_loader_test, reads_every_setting_of_a_copy_mapping) {
  auto r = load_mappings(source_dir / "mappings/orders-customer.json", "");
  ASSERT_TRUE(r.has_value()) << all_errors(r);
  const auto& m = r->front();
  ASSERT_NE(m.as<mapping::copy_kind>(), nullptr);
  const auto& k = *m.as<mapping::copy_kind>();
  EXPECT_EQ(m.kind_name(), "copy");
  EXPECT_EQ(m.source, (mapping::ns{"shop", "customers"}));
  EXPECT_EQ(m.target, (mapping::ns{"shop", "orders"}));
  EXPECT_EQ(k.source_key, "_id");
  EXPECT_EQ(k.target_key, "customerId");
  ASSERT_TRUE(k.where.has_value());
  EXPECT_TRUE(m.fill_new_targets);
  EXPECT_EQ(m.on_source_delete, mapping::delete_policy::keep);
  ASSERT_EQ(m.fields.size(), 3u);
  EXPECT_EQ(m.fields[2].name, "city");
  EXPECT_EQ(m.fields[2].source_path, "address.city");
  EXPECT_EQ(k.target_path(m, m.fields[2].name), "customer.city");
  EXPECT_EQ(k.target_paths[2], "customer.city");
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
  ASSERT_NE(m.as<mapping::recent_kind>(), nullptr);
  const auto& k = *m.as<mapping::recent_kind>();
  EXPECT_EQ(k.parent_field, "_id");
  EXPECT_EQ(m.on_source_delete, mapping::delete_policy::pull_and_refill);
  ASSERT_EQ(k.sort.size(), 2u);
  EXPECT_EQ(k.sort[1].name, "id");  // the id breaks ties
  EXPECT_EQ(k.sort_paths, (std::vector<std::string>{"createdAt", "_id"}));
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

// A fresh folder of its own (tests of several build trees may run at once).
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A copy mapping with the given name, fields and `where` (JSON text).
std::string copy_mapping(const std::string& name, const std::string& fields,
                         const std::string& where = "{}") {
  return R"({"name":")" + name + R"(","kind":"copy","source":{"db":"s","collection":"a"},
    "target":{"db":"s","collection":"b","key":"aId","where":)" +
         where + R"(},"into":"a","fields":)" + fields + "}";
}

// `{"$and":[{"$and":[ ... {"x":1} ... ]}]}` with `levels` operators: 2 * levels + 1 JSON levels.
std::string nested_and(int levels) {
  std::string s;
  for (int i = 0; i < levels; ++i)
    s += R"({"$and":[)";
  s += R"({"x":1})";
  for (int i = 0; i < levels; ++i)
    s += "]}";
  return s;
}

std::string many_fields(int n, const std::string& extra = "") {
  std::string s = "{";
  for (int i = 0; i < n; ++i)
    s += (i == 0 ? "" : ",") + ("\"f" + std::to_string(i) + "\":\"s" + std::to_string(i) + "\"");
  return s + extra + "}";
}

TEST(mapping_loader_test, symlink_loop_in_the_folder_is_an_error_naming_the_file) {
  const fs::path dir = fresh_dir("denormd-symlink-loop");
  fs::create_symlink("b.json", dir / "a.json");
  fs::create_symlink("a.json", dir / "b.json");
  std::ofstream(dir / "c.json") << copy_mapping("c", R"({"n":"n"})");
  const auto r = load_mappings(dir, "");
  const auto single = load_mappings(dir / "a.json", "");
  fs::remove_all(dir);
  ASSERT_FALSE(r.has_value());
  ASSERT_EQ(r.error().size(), 2u) << all_errors(r);
  EXPECT_TRUE(r.error()[0].file.ends_with("a.json")) << all_errors(r);  // in name order
  EXPECT_TRUE(r.error()[1].file.ends_with("b.json")) << all_errors(r);
  for (const auto& e : r.error()) {
    EXPECT_NE(e.message.find("cannot be read: Too many levels of symbolic links"),
              std::string::npos)
        << e.to_string();
  }
  ASSERT_FALSE(single.has_value());
  EXPECT_NE(all_errors(single).find("Too many levels of symbolic links"), std::string::npos);
}

TEST(mapping_loader_test, names_have_a_maximum_length) {
  const std::string longest(max_name_length, 'n');
  EXPECT_TRUE(parse_mapping("m.json", copy_mapping(longest, R"({"n":"n"})"), "").has_value());
  for (const std::size_t length : {max_name_length + 1, std::size_t{30000}}) {
    const auto r =
        parse_mapping("m.json", copy_mapping(std::string(length, 'n'), R"({"n":"n"})"), "");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(all_errors(r), "m.json: /name: a name of " + std::to_string(length) +
                                 " characters is too long (at most 128)\n");
  }
  // The hand-written check rejects what the pattern rejected.
  for (const std::string bad : {"-a", "a b", "a/b", "", "é"}) {
    EXPECT_FALSE(parse_mapping("m.json", copy_mapping(bad, R"({"n":"n"})"), "").has_value()) << bad;
  }
  EXPECT_TRUE(parse_mapping("m.json", copy_mapping("A9_.-z", R"({"n":"n"})"), "").has_value());
}

TEST(mapping_loader_test, queries_nest_at_most_the_documented_depth) {
  // 31 operators: 63 levels; 32: 65 levels (the query object is level 1).
  EXPECT_TRUE(
      parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", nested_and(31)), "").has_value());
  const auto r = parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", nested_and(32)), "");
  ASSERT_FALSE(r.has_value());
  ASSERT_EQ(r.error().size(), 1u) << all_errors(r);
  std::string pointer = "/target/where";
  for (int i = 0; i < 32; ++i)
    pointer += "/$and/0";
  EXPECT_EQ(r.error()[0].pointer, pointer);
  EXPECT_EQ(r.error()[0].message,
            "the query nests objects and arrays deeper than 64 levels (the limit of mapping "
            "queries)");
}

TEST(mapping_loader_test, files_nest_at_most_the_documented_depth) {
  // 9,000 operators overflowed the stack; the reader stops at the file limit instead.
  for (const int levels : {49, 9000}) {
    const auto r =
        parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", nested_and(levels)), "");
    ASSERT_FALSE(r.has_value());
    ASSERT_EQ(r.error().size(), 1u) << all_errors(r);
    // Level 101 is the 49th operator's array (the root, target, where and 48 pairs are 99).
    std::string pointer = "/target/where";
    for (int i = 0; i < 48; ++i)
      pointer += "/$and/0";
    EXPECT_EQ(r.error()[0].pointer, pointer + "/$and/0");
    EXPECT_EQ(r.error()[0].message,
              "nests objects and arrays deeper than 100 levels (the limit of a mapping file)");
  }
  std::string deep_array(5000, '[');
  const auto r = parse_mapping("m.json", R"({"description":)" + deep_array, "");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(all_errors(r).find("/description/0/0/0"), std::string::npos);
}

TEST(mapping_loader_test, duplicate_keys_are_rejected) {
  const auto r = parse_mapping(
      "m.json", copy_mapping("m", R"({"n":"n","x":{"y":1,"y":2},"n":"m"})", R"({"a":[{"b":1}]})"),
      "");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(all_errors(r), "m.json: /fields/x/y: duplicate key \"y\"\n");
  const auto in_array =
      parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", R"({"a":[1,{"b":1,"b":1}]})"), "");
  EXPECT_EQ(all_errors(in_array), "m.json: /target/where/a/1/b: duplicate key \"b\"\n");
}

TEST(mapping_loader_test, many_fields_load_and_keep_their_order_and_overlap_checks) {
  // Loading was quadratic in the number of fields (100,000 took over a minute).
  constexpr int n = 100000;
  const auto r = parse_mapping("m.json", copy_mapping("m", many_fields(n)), "");
  ASSERT_TRUE(r.has_value()) << all_errors(r).substr(0, 2000);
  ASSERT_EQ(r->front().fields.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(r->front().fields[n - 1].name, "f" + std::to_string(n - 1));
  const auto overlap = parse_mapping(
      "m.json", copy_mapping("m", many_fields(n, R"(,"f7.a.b":"x","f99999.c":"y")")), "");
  ASSERT_FALSE(overlap.has_value());
  EXPECT_EQ(all_errors(overlap),
            "m.json: /fields/f7.a.b: overlaps field \"f7\" of the same mapping\n"
            "m.json: /fields/f99999.c: overlaps field \"f99999\" of the same mapping\n");
}

TEST(mapping_loader_test, a_where_with_many_conditions_loads) {
  // Compiling the query noted each path with a linear search (100,000 took minutes).
  constexpr int n = 100000;
  std::string where = "{";
  for (int i = 0; i < n; ++i)
    where += (i == 0 ? "" : ",") + ("\"w" + std::to_string(i) + "\":" + std::to_string(i));
  const auto r = parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", where + "}"), "");
  ASSERT_TRUE(r.has_value()) << all_errors(r).substr(0, 2000);
  const auto& compiled = std::get<mapping::copy_kind>(r->front().kind).where;
  ASSERT_TRUE(compiled.has_value());
  EXPECT_EQ(compiled->paths().size(), static_cast<std::size_t>(n));
}

// Complexity guards: tests/unit/CMakeLists.txt runs each as a ctest entry of its own with a
// 60 s TIMEOUT (and test discovery leaves them out). They assert no speed; they exist so that
// loading that turns quadratic again fails instead of only getting slower: 300,000 entries
// load in about 2 s, where the quadratic loader took minutes (the numbers are in CMakeLists).
constexpr int complexity_guard_entries = 300000;

TEST(loader_complexity_guard, three_hundred_thousand_fields_load) {
  constexpr int n = complexity_guard_entries;
  const auto r = parse_mapping("m.json", copy_mapping("m", many_fields(n)), "");
  ASSERT_TRUE(r.has_value()) << all_errors(r).substr(0, 2000);
  ASSERT_EQ(r->front().fields.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(r->front().fields[n - 1].name, "f" + std::to_string(n - 1));
}

TEST(loader_complexity_guard, a_where_with_three_hundred_thousand_conditions_loads) {
  constexpr int n = complexity_guard_entries;
  std::string where = "{";
  for (int i = 0; i < n; ++i)
    where += (i == 0 ? "" : ",") + ("\"w" + std::to_string(i) + "\":" + std::to_string(i));
  const auto r = parse_mapping("m.json", copy_mapping("m", R"({"n":"n"})", where + "}"), "");
  ASSERT_TRUE(r.has_value()) << all_errors(r).substr(0, 2000);
  const auto& compiled = std::get<mapping::copy_kind>(r->front().kind).where;
  ASSERT_TRUE(compiled.has_value());
  EXPECT_EQ(compiled->paths().size(), static_cast<std::size_t>(n));
}

TEST(mapping_loader_test, target_paths_are_checked_across_many_mappings) {
  const fs::path dir = fresh_dir("denormd-many-paths");
  // Same target b, into "a": a/f0..f4999 and b/f4999 (equal path) and c/f10.x (a child path).
  std::ofstream(dir / "1.json") << copy_mapping("one", many_fields(5000));
  std::ofstream(dir / "2.json") << copy_mapping("two", R"({"f4999":"x"})");
  std::ofstream(dir / "3.json") << copy_mapping("three", R"({"f10.x":"x"})");
  const auto r = load_mappings(dir, "");
  fs::remove_all(dir);
  ASSERT_FALSE(r.has_value());
  const std::string errors = all_errors(r);
  ASSERT_EQ(r.error().size(), 2u) << errors;
  EXPECT_NE(errors.find("2.json: /fields: writes s.b path \"a.f4999\", which mapping \"one\""),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("3.json: /fields: writes s.b path \"a.f10.x\", which mapping \"one\""),
            std::string::npos)
      << errors;
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
