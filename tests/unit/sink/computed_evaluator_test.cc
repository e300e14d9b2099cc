#include "sink/computed_evaluator.h"

#include <gtest/gtest.h>

#include "bson/json.h"
#include "config/mapping_loader.h"
#include "finds_nothing.h"
#include "mapping/computed_expression.h"
#include "mapping/planner.h"

namespace denormd::sink {
namespace {

// Everything but aggregate() answers nothing: the evaluator only aggregates.
class only_aggregates : public fakes::finds_nothing<mongo::document_client> {
 public:
  mongo::result<mongo::bulk_outcome> update_bulk(const std::string&, const std::string&,
                                                 std::span<const mongo::write_request>,
                                                 bool) override {
    return mongo::bulk_outcome{};
  }
  mongo::status insert_one(const std::string&, const std::string&, const bson::document&) override {
    return {};
  }
  mongo::status find_each(const std::string&, const std::string&, const bson::document&,
                          const mongo::find_options&,
                          const std::function<bool(bson::document&&)>&) override {
    return {};
  }
};

// A server that evaluates {aggregate: 1, [$documents: {$literal: docs}, $project]} for a
// projection of one kind only: each key's value is the document's "n" as text, and a document
// whose "n" is "bad" is refused with code 241 (as $toString never is, but $toInt of "abc" is).
class fake_server final : public only_aggregates {
 public:
  std::uint32_t refuse_all_code = 0;  // not 0: every call is refused with it
  int calls = 0;

  mongo::result<std::vector<bson::document>> aggregate(const std::string&, const std::string& coll,
                                                       const bson::array& pipeline) override {
    ++calls;
    EXPECT_EQ(coll, "");
    auto error = [](std::uint32_t code) {
      return mongo::failure(mongo::driver_error{
          mongo::driver_error::origin::server, code, "Failed to parse number 'bad'", {}});
    };
    if (refuse_all_code != 0) return error(refuse_all_code);
    const auto& docs =
        pipeline.at(0).as_document().get("$documents")->as_document().get("$literal")->as_array();
    const auto& projection = pipeline.at(1).as_document().get("$project")->as_document();
    std::vector<bson::document> out;
    for (const auto& d : docs) {
      const bson::value* n = d.as_document().get("n");
      if (n != nullptr && n->is_string() && n->as_string() == "bad") return error(241);
      bson::document values;
      for (const auto& f : projection) {
        if (f.name != "_id" && n != nullptr) values.append(f.name, *n);
      }
      out.push_back(std::move(values));
    }
    return out;
  }
};

class computed_evaluator_test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ms = config::parse_mapping("m.json", R"({"name":"oc","kind":"copy",
      "source":{"collection":"customers"},"target":{"collection":"orders","key":"customerId"},
      "fields":{"a":{"$toInt":"$n"},"b":{"$toLong":"$n"}}})",
                                    "shop");
    ASSERT_TRUE(ms.has_value());
    plan_ = std::make_unique<mapping::planner>(std::move(ms).value());
    fields_ = plan_->computed({"shop", "customers"});
    ASSERT_NE(fields_, nullptr);
  }

  std::vector<bson::document> docs(std::size_t n, const std::vector<std::size_t>& bad) {
    std::vector<bson::document> out;
    for (std::size_t i = 0; i < n; ++i) {
      const bool refused = std::find(bad.begin(), bad.end(), i) != bad.end();
      out.push_back(bson::document{{"_id", static_cast<std::int64_t>(i)},
                                   {"n", refused ? std::string("bad") : std::to_string(i)},
                                   {"unread", "x"}});
    }
    return out;
  }

  std::unique_ptr<mapping::planner> plan_;
  const mapping::computed_fields* fields_ = nullptr;
};

std::vector<bson::document*> pointers(std::vector<bson::document>& docs) {
  std::vector<bson::document*> out;
  for (auto& d : docs)
    out.push_back(&d);
  return out;
}

TEST_F(computed_evaluator_test, every_document_gets_its_values_in_one_round_trip) {
  fake_server server;
  computed_evaluator e(server);
  auto d = docs(100, {});
  auto failures = e.evaluate("shop", *fields_, pointers(d));
  ASSERT_TRUE(failures.has_value());
  EXPECT_TRUE(failures->empty());
  EXPECT_EQ(server.calls, 1);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const bson::value* root = d[i].get("__denormd_computed");
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(root->as_document().size(), 2u);
    EXPECT_EQ(root->as_document().fields().front().val, bson::value(std::to_string(i)));
  }
}

TEST_F(computed_evaluator_test, only_the_refused_documents_fail_and_the_search_is_logarithmic) {
  fake_server server;
  computed_evaluator e(server);
  auto d = docs(256, {17, 200});
  auto failures = e.evaluate("shop", *fields_, pointers(d));
  ASSERT_TRUE(failures.has_value());
  // Each refused document fails for each of its two fields, naming the server's error.
  ASSERT_EQ(failures->size(), 4u);
  EXPECT_EQ((*failures)[0].doc, 17u);
  EXPECT_EQ((*failures)[2].doc, 200u);
  EXPECT_NE((*failures)[0].what.error.find("241"), std::string::npos);
  EXPECT_EQ(d[17].get("__denormd_computed")->as_document().size(), 0u);
  EXPECT_EQ(d[18].get("__denormd_computed")->as_document().size(), 2u);
  // Halving: about 2 * log2(256) calls per refused document, not one per document.
  EXPECT_LT(server.calls, 40) << server.calls;
}

TEST_F(computed_evaluator_test, a_refusal_that_any_document_would_get_is_an_error_not_failures) {
  fake_server server;
  server.refuse_all_code = 40324;  // Unrecognized pipeline stage name: '$documents'
  computed_evaluator e(server);
  auto d = docs(8, {});
  auto failures = e.evaluate("shop", *fields_, pointers(d));
  ASSERT_FALSE(failures.has_value());
  EXPECT_EQ(failures.error().code, 40324u);
  EXPECT_EQ(server.calls, 1);
}

TEST_F(computed_evaluator_test, documents_are_sent_as_literal_data_trimmed_to_the_fields_read) {
  class recording final : public only_aggregates {
   public:
    bson::array pipeline;
    mongo::result<std::vector<bson::document>> aggregate(const std::string&, const std::string&,
                                                         const bson::array& p) override {
      pipeline = p;
      return std::vector<bson::document>{bson::document{}};
    }
  } server;
  computed_evaluator e(server);
  std::vector<bson::document> d{
      bson::document{{"_id", 1}, {"n", "$where"}, {"unread", bson::document{{"$gt", 1}}}}};
  ASSERT_TRUE(e.evaluate("shop", *fields_, pointers(d)).has_value());
  EXPECT_EQ(bson::to_json(server.pipeline.at(0).as_document()),
            R"({"$documents":{"$literal":[{"_id":1,"n":"$where"}]}})");
}

}  // namespace
}  // namespace denormd::sink
