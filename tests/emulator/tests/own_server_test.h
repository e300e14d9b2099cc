#pragma once
// A fixture for suites whose tests each need a test server of their own (a step-down, a
// parameter or a resized history changes what every client of it sees): start() runs one,
// connected by a raw client; run() sends a command to it. One per test; not thread-safe.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "emulator_fixture.h"
#include "raw_client.h"

namespace mongo_emulator::test {

class own_server_test : public ::testing::Test {
 protected:
  // Skipped against a real deployment (DENORMD_TEST_URI): it cannot be started per test.
  void start(const std::vector<std::string>& args = {}) {
    if (!denormd::test::emulator_only_available()) GTEST_SKIP() << "needs its own test server";
    auto p = denormd::test::emulator_process::start(args);
    ASSERT_TRUE(p) << p.error().message;
    server_.emplace(std::move(p).value());
    auto c = raw_client::connect(server_->host_port());
    ASSERT_TRUE(c);
    client_.emplace(std::move(*c));
  }
  // `command` on `db`, unless it names its own $db.
  bson::document run(bson::document command, const char* db = "admin") {
    if (command.get("$db") == nullptr) command.append("$db", db);
    auto r = client_->command(command);
    EXPECT_TRUE(r) << "no reply";
    return r ? std::move(*r) : bson::document{};
  }

  std::optional<denormd::test::emulator_process> server_;
  std::optional<raw_client> client_;
};

}  // namespace mongo_emulator::test
