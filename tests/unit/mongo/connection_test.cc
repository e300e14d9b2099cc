#include "mongo/connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "common/log.h"

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

}  // namespace
}  // namespace denormd::mongo
