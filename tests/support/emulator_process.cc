#include "emulator_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace denormd::test {

namespace {

using clock = std::chrono::steady_clock;

// Reads one line from `fd` before `deadline`; nullopt on EOF or timeout.
std::optional<std::string> read_line(int fd, clock::time_point deadline) {
  std::string line;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    line.push_back(c);
  }
}

}  // namespace

std::string emulator_path() {
  if (const char* env = std::getenv("DENORMD_EMULATOR"); env != nullptr && *env != '\0') return env;
  return DENORMD_EMULATOR_PATH;
}

bool emulator_only_available() {
  const char* uri = std::getenv("DENORMD_TEST_URI");
  return uri == nullptr || *uri == '\0';
}

expected<emulator_process> emulator_process::start(const std::vector<std::string>& extra_args,
                                                   std::chrono::milliseconds timeout) {
  const std::string path = emulator_path();
  std::vector<std::string> args{path, "--port", "0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return fail(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out[1], STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  emulator_process p;
  p.pid_ = pid;
  auto line = read_line(out[0], clock::now() + timeout);
  ::close(out[0]);
  constexpr std::string_view prefix = "listening on ";
  if (!line || !line->starts_with(prefix)) {
    p.kill9();
    return fail("mongo-emulator (" + path + ") did not report its address within " +
                std::to_string(timeout.count()) + " ms");
  }
  p.host_port_ = line->substr(prefix.size());
  return p;
}

emulator_process::emulator_process(emulator_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      host_port_(std::move(other.host_port_)),
      exit_status_(other.exit_status_) {}

emulator_process& emulator_process::operator=(emulator_process&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) stop();
    pid_ = std::exchange(other.pid_, -1);
    host_port_ = std::move(other.host_port_);
    exit_status_ = other.exit_status_;
  }
  return *this;
}

emulator_process::~emulator_process() {
  if (pid_ > 0) stop();
}

std::string emulator_process::uri(std::string_view options) const {
  std::string u = "mongodb://" + host_port_ + "/";
  if (!options.empty()) u += "?" + std::string(options);
  return u;
}

bool emulator_process::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    pid_ = -1;
    return false;
  }
  return true;
}

int emulator_process::reap(std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  while (pid_ > 0) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      pid_ = -1;
      break;
    }
    if (r < 0 && errno != EINTR) {
      pid_ = -1;
      break;
    }
    if (clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      exit_status_ = -SIGKILL;
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_status_;
}

int emulator_process::stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return exit_status_;
  ::kill(pid_, SIGTERM);
  return reap(timeout);
}

void emulator_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(std::chrono::seconds(5));
}

std::string test_uri() {
  if (!emulator_only_available()) return std::getenv("DENORMD_TEST_URI");
  // One emulator per test process, stopped by the static destructor at exit.
  static std::once_flag once;
  static std::unique_ptr<emulator_process> shared;
  static std::string error;
  std::call_once(once, [] {
    auto p = emulator_process::start();
    if (p) {
      shared = std::make_unique<emulator_process>(std::move(p).value());
    } else {
      error = p.error().message;
    }
  });
  if (!shared) {
    std::fprintf(stderr, "test_uri: %s\n", error.c_str());
    std::abort();
  }
  return shared->uri();
}

}  // namespace denormd::test
