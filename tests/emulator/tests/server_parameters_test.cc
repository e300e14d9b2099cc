// server_parameters without a server: getParameter's and setParameter's replies and errors as
// MongoDB's parameters.cpp gives them, and setting transactionLifetimeLimitSeconds reaching the
// storage that enforces it.

#include "server_parameters.h"

#include <gtest/gtest.h>

#include "storage.h"

namespace mongo_emulator {
namespace {

bson::document doc(std::initializer_list<bson::field> fields) {
  return bson::document(fields);
}

class parameters : public ::testing::Test {
 protected:
  storage store_{100, std::chrono::seconds(60)};
  server_parameters params_{store_, false};
};

TEST_F(parameters, get_names_star_and_details) {
  auto r = params_.get(doc({{"getParameter", 1}, {"transactionLifetimeLimitSeconds", 1}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, doc({{"transactionLifetimeLimitSeconds", std::int32_t{60}}}));
  r = params_.get(doc({{"getParameter", "*"}}));
  ASSERT_TRUE(r);
  std::vector<std::string> names;
  for (const auto& f : *r)
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"featureCompatibilityVersion",
                                             "internalChangeStreamRespectsReadPreference",
                                             "transactionLifetimeLimitSeconds"}));
  EXPECT_EQ(*r->get("featureCompatibilityVersion"), bson::value(doc({{"version", "6.0"}})));
  EXPECT_EQ(*r->get("internalChangeStreamRespectsReadPreference"), bson::value(false));
  r = params_.get(doc({{"getParameter", doc({{"showDetails", true}})},
                       {"internalChangeStreamRespectsReadPreference", 1}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(
      *r,
      doc({{"internalChangeStreamRespectsReadPreference",
            doc({{"value", false}, {"settableAtRuntime", true}, {"settableAtStartup", true}})}}));
  r = params_.get(doc({{"getParameter", doc({{"allParameters", true}})}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 3U);
}

TEST_F(parameters, get_of_nothing_known_fails_with_72) {
  auto r = params_.get(doc({{"getParameter", 1}, {"notAParameter", 1}, {"$db", "admin"}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 72);
  EXPECT_EQ(r.error().message, "no option found to get");
  r = params_.get(doc({{"getParameter", doc({{"bogus", true}})}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 40415);
}

TEST_F(parameters, set_reports_the_old_value_and_takes_effect) {
  auto r = params_.set(doc({{"setParameter", 1},
                            {"transactionLifetimeLimitSeconds", 10},
                            {"internalChangeStreamRespectsReadPreference", true},
                            {"$db", "admin"}}));
  ASSERT_TRUE(r) << r.error().message;
  // `was` is the first one's, in name order.
  EXPECT_EQ(*r, doc({{"was", false}}));
  EXPECT_EQ(store_.transaction_lifetime(), std::chrono::seconds(10));
  EXPECT_TRUE(params_.change_streams_respect_read_preference());
  r = params_.set(doc({{"setParameter", 1}, {"transactionLifetimeLimitSeconds", 2.9}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, doc({{"was", std::int32_t{10}}}));
  EXPECT_EQ(store_.transaction_lifetime(), std::chrono::seconds(2));  // numberInt() truncates
  // coerce<bool> takes any value's truth.
  ASSERT_TRUE(
      params_.set(doc({{"setParameter", 1}, {"internalChangeStreamRespectsReadPreference", 0}})));
  EXPECT_FALSE(params_.change_streams_respect_read_preference());
}

TEST_F(parameters, set_refuses_as_mongodb_does) {
  const auto code_of = [&](const bson::document& body) {
    auto r = params_.set(body);
    return r ? 0 : r.error().code;
  };
  EXPECT_EQ(code_of(doc({{"setParameter", 1}, {"nope", 1}})), 72);
  EXPECT_EQ(code_of(doc({{"setParameter", 1}})), 72);
  EXPECT_EQ(code_of(doc({{"setParameter", 1}, {"featureCompatibilityVersion", "5.0"}})), 20);
  EXPECT_EQ(code_of(doc({{"setParameter", 1}, {"transactionLifetimeLimitSeconds", "x"}})), 2);
  EXPECT_EQ(code_of(doc({{"setParameter", 1}, {"transactionLifetimeLimitSeconds", 0}})), 2);
  bson::document twice{{"setParameter", 1}};
  twice.append("transactionLifetimeLimitSeconds", 5);
  twice.append("transactionLifetimeLimitSeconds", 6);
  auto r = params_.set(twice);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 72);
  EXPECT_EQ(r.error().message,
            "attempted to set parameter [transactionLifetimeLimitSeconds] twice in the same "
            "setParameter command, once to value: [transactionLifetimeLimitSeconds: 5], and once "
            "to value: [transactionLifetimeLimitSeconds: 6]");
  r = params_.set(doc({{"setParameter", 1}, {"transactionLifetimeLimitSeconds", -3}}));
  ASSERT_FALSE(r);
  EXPECT_EQ(
      r.error().message,
      "Invalid value for parameter transactionLifetimeLimitSeconds: -3 is not greater than or "
      "equal to 1");
  // Nothing was set by the refused commands.
  EXPECT_EQ(store_.transaction_lifetime(), std::chrono::seconds(60));
}

}  // namespace
}  // namespace mongo_emulator
