#include "mongo/driver_error.h"

#include <gtest/gtest.h>

namespace denormd::mongo {
namespace {

driver_error server(std::uint32_t code, std::vector<std::string> labels = {}) {
  return driver_error{driver_error::origin::server, code, "m", std::move(labels)};
}

TEST(driver_error_test, classifies_what_to_retry) {
  EXPECT_TRUE((driver_error{driver_error::origin::network, 0, "socket", {}}).transient());
  for (std::uint32_t code : {6u, 7u, 89u, 91u, 189u, 10107u, 11600u, 11602u, 13435u, 13436u}) {
    EXPECT_TRUE(server(code).transient()) << code;
  }
  EXPECT_TRUE(server(12345, {"RetryableWriteError"}).transient());
  EXPECT_FALSE(server(17419).transient());  // document too large: a dead letter, not a retry
  EXPECT_FALSE(server(121).transient());    // validation
  EXPECT_FALSE(server(13).transient());     // unauthorized
  EXPECT_FALSE((driver_error{driver_error::origin::client, 6, "invalid", {}}).transient());
}

TEST(driver_error_test, recognizes_lost_history) {
  EXPECT_TRUE(server(286, {"NonResumableChangeStreamError"}).history_lost());
  EXPECT_TRUE(server(280).history_lost());
  EXPECT_TRUE(server(260).history_lost());
  EXPECT_FALSE(server(43).history_lost());
  EXPECT_FALSE((driver_error{driver_error::origin::client, 286, "", {}}).history_lost());
}

TEST(driver_error_test, describes_itself_for_logs_and_metrics) {
  EXPECT_EQ(server(11000).metric_code(), "11000");
  EXPECT_EQ((driver_error{driver_error::origin::network, 0, "x", {}}).metric_code(), "network");
  EXPECT_EQ(server(91, {"RetryableWriteError"}).to_string(), "m (code 91) [RetryableWriteError]");
}

}  // namespace
}  // namespace denormd::mongo
