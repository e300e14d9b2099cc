#include "mongo/connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>

#include "common/log.h"
#include "emulator_process.h"

namespace denormd::mongo {
namespace {

std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Opening parses the URI and creates the pool without contacting any server.
class connection_test : public ::testing::Test {
 protected:
  void TearDown() override { log::configure(log::format::text, log::level::info, &std::cerr); }
};

TEST_F(connection_test, an_unparseable_uri_is_reported_by_what_is_wrong_not_by_its_secret) {
  auto c = connection::open("mongodb://app:S3cr3tPW:x@localhost:1/", "test");
  ASSERT_FALSE(c);
  const std::string message = c.error().to_string();
  EXPECT_NE(message.find("invalid MongoDB URI: Password \"****\" must not have unescaped chars"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("S3cr3tPW"), std::string::npos) << message;
}

TEST_F(connection_test, driver_log_lines_go_through_the_logger_redacted) {
  std::ostringstream out;
  log::configure(log::format::json, log::level::debug, &out);
  // An unknown option named like a secret, then a fragment of it after an unescaped '&': the
  // driver warns about both (in lower case) as unsupported options.
  auto c = connection::open("mongodb://localhost:1/?fooToken=S3cr3tPW&S3cr3tPWx=1", "test");
  ASSERT_TRUE(c) << c.error().to_string();
  const std::string text = out.str();
  EXPECT_NE(text.find("{\"ts\":"), std::string::npos) << text;
  EXPECT_NE(text.find("\"component\":\"mongoc\""), std::string::npos) << text;
  EXPECT_NE(text.find("Unsupported URI option"), std::string::npos) << text;
  EXPECT_EQ(lowered(text).find("s3cr3tpw"), std::string::npos) << text;
}

TEST_F(connection_test, driver_log_lines_obey_the_level) {
  std::ostringstream out;
  log::configure(log::format::text, log::level::error, &out);
  ::testing::internal::CaptureStderr();  // where the driver's own handler writes
  auto c = connection::open("mongodb://localhost:1/?fooBar=1", "test");
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(c) << c.error().to_string();
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.find("fooBar"), std::string::npos) << err;
  EXPECT_EQ(err.find("foobar"), std::string::npos) << err;
}

// A session's transactions against a server (the test server, or DENORMD_TEST_URI): a bulk the
// driver would send as several commands is its transaction's first statement, and commits
// (libmongoc 1.23 would say startTransaction in each of them: the server refuses the second).
TEST(connection_session_test, a_first_statement_larger_than_one_message_commits) {
  auto conn = connection::open(test::test_uri(), "connection_session_test").value();
  const std::string db = "connection_session_test_" + std::to_string(std::random_device{}());
  const std::string big(9 << 20, 'x');
  for (int id = 1; id <= 6; ++id)
    ASSERT_TRUE(conn->insert_one(db, "c", bson::document{{"_id", id}}));
  auto session = conn->start_session().value();
  for (int round = 0; round < 2; ++round) {
    std::vector<bson::document> filters, updates;
    for (int id = 1; id <= 6; ++id) {
      filters.push_back(bson::document{{"_id", id}});
      updates.push_back(
          bson::document{{"$set", bson::document{{"blob", big.substr(round)}, {"round", round}}}});
    }
    std::vector<write_request> requests(6);
    for (std::size_t i = 0; i < 6; ++i) {
      requests[i].filter = &filters[i];
      requests[i].update = &updates[i];
    }
    auto txn = session->start_transaction().value();
    auto out = txn->update_bulk(db, "c", requests, true);
    ASSERT_TRUE(out) << out.error().to_string();
    ASSERT_FALSE(out->write_error) << out->write_error->to_string();
    EXPECT_EQ(out->modified, 6);  // 54 MB: more than one 48 MB message
    ASSERT_TRUE(txn->commit());
  }
  auto doc = conn->find_one(db, "c", bson::document{{"_id", 6}}).value();
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->get("round")->to_double(), 1);
  (void)conn->command(db, bson::document{{"dropDatabase", 1}});
}

}  // namespace
}  // namespace denormd::mongo
