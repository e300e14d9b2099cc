// The check and plan commands end to end, in process: what a user sees for the sample
// mappings and the events the issue names.
#include "app/application.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace denormd::app {
namespace {

namespace fs = std::filesystem;
const std::string samples = std::string(DENORMD_SOURCE_DIR) + "/mappings";

struct outcome {
  int code;
  std::string out;
  std::string err;
};

outcome run(const std::vector<std::string>& args) {
  auto o = parse_options(args, "");
  EXPECT_TRUE(o.has_value()) << (o ? "" : o.error().message);
  std::ostringstream out;
  std::ostringstream err;
  const int code = application(std::move(o).value(), out, err).run();
  return {code, out.str(), err.str()};
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("denormd-app-test-" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(application_test, check_accepts_the_samples_and_lists_indexes) {
  auto r = run({"check", "--mappings", samples});
  EXPECT_EQ(r.code, exit_ok) << r.err;
  EXPECT_NE(r.out.find("8 mapping(s) OK"), std::string::npos);
  EXPECT_NE(
      r.out.find(R"(index shop.reviews {"productId":1}  (recompute: the children of a parent))"),
      std::string::npos);
  EXPECT_NE(
      r.out.find(R"(index shop.orders {"customerId":1}  (recompute: the children of a parent))"),
      std::string::npos);
  EXPECT_NE(r.out.find(R"(index shop.orders {"items.productId":1})"), std::string::npos);
  EXPECT_NE(r.out.find(R"(index shop.reviews {"productId":1,"createdAt":-1,"_id":1})"),
            std::string::npos);
}

TEST(application_test, check_exits_2_naming_file_and_pointer) {
  const fs::path dir = fs::temp_directory_path() / "denormd-app-test-typo";
  fs::create_directories(dir);
  std::ofstream(dir / "bad.json")
      << R"({"name":"x","kind":"copy","source":{"db":"s","collection":"a"},
    "target":{"db":"s","collection":"b","key":"k"},"feilds":{"a":"a"}})";
  auto r = run({"check", "--mappings", dir.string()});
  EXPECT_EQ(r.code, exit_usage);
  EXPECT_NE(r.err.find("bad.json: /feilds: unknown key \"feilds\" (did you mean \"fields\"?)"),
            std::string::npos)
      << r.err;
}

TEST(application_test, check_warns_about_a_where_without_fill_new_targets_and_exits_0) {
  const fs::path dir = fs::temp_directory_path() / "denormd-app-test-where";
  fs::create_directories(dir);
  // The same copy into a different collection each, as two mappings may not write one path.
  const auto copy = [](const std::string& name, const std::string& extra) {
    return R"({"name":")" + name + R"(",)" + extra +
           R"("kind":"copy","source":{"db":"s","collection":"c"},"target":{"db":"s",
    "collection":")" +
           name + R"(","key":"cid","where":{"status":"PAID"}},
    "fields":{"name":"name"},"into":"customer"})";
  };
  std::ofstream(dir / "stale.json") << copy("stale", "");
  std::ofstream(dir / "filled.json") << copy("filled", R"("fillNewTargets":true,)");
  std::ofstream(dir / "all.json") << R"({"name":"all","kind":"copy","source":{"db":"s",
    "collection":"c"},"target":{"db":"s","collection":"p","key":"cid"},"fields":{"n":"n"},
    "into":"c"})";
  auto r = run({"check", "--mappings", dir.string()});
  EXPECT_EQ(r.code, exit_ok) << r.err;
  EXPECT_NE(r.out.find("3 mapping(s) OK"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: stale ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stale.json): target.where without fillNewTargets"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("filled"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("all"), std::string::npos) << r.err;
}

TEST(application_test, checks_note_about_images_names_the_mappings_it_is_about) {
  const fs::path dir = fs::temp_directory_path() / "denormd-app-test-images";
  fs::create_directories(dir);
  fs::copy_file(
      fs::path(DENORMD_SOURCE_DIR) / "tests/cases/aggregate-incremental-delete/mapping.json",
      dir / "hosts-log-count.json", fs::copy_options::overwrite_existing);
  auto r = run({"check", "--mappings", dir.string()});
  EXPECT_EQ(r.code, exit_ok) << r.err;
  EXPECT_NE(r.err.find("note: shop.logmsgs must keep pre- and post-images (mapping(s) "
                       "hosts-log-count read it incrementally); pass --uri to check"),
            std::string::npos)
      << r.err;
}

TEST(application_test, check_of_the_samples_warns_about_nothing) {
  auto r = run({"check", "--mappings", samples});
  EXPECT_EQ(r.code, exit_ok);
  EXPECT_EQ(r.err, "");
}

TEST(application_test, plan_prints_the_writes_the_issue_names) {
  const std::string events = write_temp("events.jsonl", R"(
{"_id":{"_data":"01"},"operationType":"update","ns":{"db":"shop","coll":"customers"},"documentKey":{"_id":1},"updateDescription":{"updatedFields":{"name":"Ann"},"removedFields":[]},"fullDocument":{"_id":1,"name":"Ann","email":"a@x","address":{"city":"Oslo"}}}
{"_id":{"_data":"02"},"operationType":"update","ns":{"db":"shop","coll":"customers"},"documentKey":{"_id":1},"updateDescription":{"updatedFields":{"lastLogin":{"$date":"2024-01-01T00:00:00Z"}},"removedFields":[]},"fullDocument":{"_id":1,"name":"Ann"}}
{"_id":{"_data":"03"},"operationType":"update","ns":{"db":"shop","coll":"products"},"documentKey":{"_id":7},"updateDescription":{"updatedFields":{"title":"Lamp"},"removedFields":[]},"fullDocument":{"_id":7,"title":"Lamp","sku":"L7"}}
{"_id":{"_data":"04"},"operationType":"insert","ns":{"db":"shop","coll":"reviews"},"documentKey":{"_id":9},"fullDocument":{"_id":9,"productId":7,"stars":4,"text":"ok","createdAt":{"$date":"2024-01-02T00:00:00Z"}}}
)");
  auto r = run({"plan", "--mappings", samples, "--events", events});
  ASSERT_EQ(r.code, exit_ok) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << r.out;  // the lastLogin update plans nothing
  EXPECT_EQ(
      lines[0],
      R"({"mapping":"orders-customer","ns":"shop.orders","op":"updateMany","filter":)"
      R"({"customerId":{"$eq":1,"$not":{"$type":"array"}},)"
      R"("status":{"$nin":["DELIVERED","CANCELLED"]}},"update":{"$set":{"customer.name":"Ann",)"
      R"("customer.email":"a@x","customer.city":"Oslo"}},"upsert":false})");
  EXPECT_EQ(lines[1],
            R"({"mapping":"orders-items-product","ns":"shop.orders","op":"updateMany","filter":)"
            R"({"items.productId":{"$eq":7}},"update":{"$set":{"items.$[e].product.title":"Lamp",)"
            R"("items.$[e].product.sku":"L7"}},"arrayFilters":[{"e.productId":{"$eq":7,"$not":)"
            R"({"$type":"array"}}}],"upsert":false})");
  EXPECT_EQ(lines[2],
            R"({"mapping":"products-rating","ns":"shop.products","op":"recompute","filter":)"
            R"({"_id":{"$in":[7]}},"source":{"ns":"shop.reviews","pipeline":[{"$match":)"
            R"({"productId":{"$in":[7],"$not":{"$type":"array"}},"hidden":{"$ne":true}}},)"
            R"({"$group":{"_id":"$productId","v0":{"$sum":1},"v1":{"$sum":"$stars"},)"
            R"("v2":{"$avg":"$stars"},"v3":{"$min":"$stars"},"v4":{"$max":"$stars"},)"
            R"("v5":{"$max":"$createdAt"}}}]},"into":"rating"})");
  EXPECT_EQ(
      lines[3],
      R"({"mapping":"products-recent-reviews","ns":"shop.products","op":"updateOne","filter":)"
      R"({"_id":{"$eq":7},"recentReviews.reviewId":{"$ne":9}},"update":{"$push":{"recentReviews":)"
      R"({"$each":[{"reviewId":9,"stars":4,"excerpt":"ok","createdAt":{"$date":"2024-01-02T00:00:00Z"}}],)"
      R"("$sort":{"createdAt":-1,"reviewId":1},"$slice":10}}},"upsert":false})");
}

TEST(application_test, plan_rejects_bad_events_with_line_numbers_and_prints_nothing) {
  const std::string events =
      write_temp("bad-events.jsonl", "{\"operationType\":\"insert\"}\nnot json\n");
  auto r = run({"plan", "--mappings", samples, "--events", events});
  EXPECT_EQ(r.code, exit_usage);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find(":1: change event has no _id"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(":2: invalid JSON"), std::string::npos) << r.err;
}

TEST(application_test, plan_reports_a_missing_events_file) {
  auto r = run({"plan", "--mappings", samples, "--events", "/nonexistent/events.jsonl"});
  EXPECT_EQ(r.code, exit_usage);
  EXPECT_NE(r.err.find("cannot open events file"), std::string::npos);
}

}  // namespace
}  // namespace denormd::app
