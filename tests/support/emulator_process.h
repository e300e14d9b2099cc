#pragma once
// Test harness: runs `mongo-emulator --port 0` as a child process and hands out its URI, or
// uses the server named by DENORMD_TEST_URI (a real replica set) instead.
// emulator_process lifecycle: start() spawns and waits for the "listening on HOST:PORT" line;
// the destructor stops it (SIGTERM, then SIGKILL after a bounded wait). The child is killed if
// the thread that started it exits. Move-only; not thread-safe.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"

namespace denormd::test {

// The mongo-emulator binary: env DENORMD_EMULATOR, else the path baked in at build time.
std::string emulator_path();

// True when the tests run against the emulator (DENORMD_TEST_URI unset), so emulator-only
// knobs (--oplog-max-events, restarts) are available; other tests call GTEST_SKIP() otherwise.
bool emulator_only_available();

class emulator_process {
 public:
  static expected<emulator_process> start(
      const std::vector<std::string>& extra_args = {},
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

  emulator_process(emulator_process&& other) noexcept;
  emulator_process& operator=(emulator_process&& other) noexcept;
  emulator_process(const emulator_process&) = delete;
  emulator_process& operator=(const emulator_process&) = delete;
  ~emulator_process();

  const std::string& host_port() const { return host_port_; }
  // "mongodb://HOST:PORT/?<options>".
  std::string uri(std::string_view options = "replicaSet=rs0") const;
  pid_t pid() const { return pid_; }
  bool running();

  // SIGTERM and wait up to `timeout` (then SIGKILL). Returns the exit code, or -signal.
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // SIGKILL and reap: a crash, as far as clients can tell.
  void kill9();

 private:
  emulator_process() = default;
  int reap(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  std::string host_port_;
  int exit_status_ = 0;
};

// The URI the shared suites test against: DENORMD_TEST_URI, or an emulator started on first
// use and stopped at process exit.
std::string test_uri();

}  // namespace denormd::test
