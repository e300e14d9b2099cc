#pragma once
// The reloads asked for (SIGHUP, POST /-/reload, a changed file with --watch-mappings) until the
// daemon's main thread takes them: every request waiting when it looks is answered by one
// reload. Also the other work only the main thread may do (starting and stopping a namespace
// whose lease came or went, with --ha), run in the order posted. Lifecycle: created before anything
// can ask; close() answers what waits and every later request with a refusal. Thread-safety: all
// methods from any thread.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace denormd::app {

// How a reload ended; `message` says what failed.
struct reload_outcome {
  bool ok = false;
  std::string message;
};

class reload_requests {
 public:
  // Called with the reload's outcome; may be empty (nobody waits for the answer).
  using answer = std::function<void(reload_outcome)>;

  void post(answer done);
  // Work for the main thread; dropped once closed.
  void post_task(std::function<void()> task);
  // Waits until a reload is asked for or a task is posted (true: `reload` says whether a
  // reload was asked for, `out` holds whom to answer, `tasks` what to run first) or `stop` is
  // requested (false).
  bool take(std::stop_token stop, bool& reload, std::vector<answer>& out,
            std::vector<std::function<void()>>& tasks);
  // Refuses what waits and whatever comes later.
  void close();

 private:
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::vector<answer> waiting_;
  std::vector<std::function<void()>> tasks_;
  bool asked_ = false;  // a request without an answer counts too
  bool closed_ = false;
};

// Calls every answer in `to` with `outcome`.
void answer_all(std::vector<reload_requests::answer>& to, const reload_outcome& outcome);

}  // namespace denormd::app
