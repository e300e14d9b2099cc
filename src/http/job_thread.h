#pragma once
// One thread of its own that runs jobs one at a time, in order: for work too slow for an
// io_context's threads (an HTTP server's bcrypt checks), which then post their result back.
//
// Lifecycle: the thread starts with the object; stop() drops the jobs not yet started, waits
// for the one running and joins the thread; the destructor stops. Called on the thread itself
// (a job dropping the last reference to the owner), stop() lets the thread finish alone.
// Thread-safety: post() and stop() from any thread.

#include <functional>
#include <memory>
#include <thread>

namespace denormd::http {

class job_thread {
 public:
  job_thread();
  ~job_thread();
  job_thread(const job_thread&) = delete;
  job_thread& operator=(const job_thread&) = delete;

  // Queues `job`; false (and `job` dropped) once stopped.
  bool post(std::function<void()> job);
  // Idempotent.
  void stop();

 private:
  struct shared;  // the queue: owned by the thread as well, so it may outlive this object
  std::shared_ptr<shared> shared_;
  std::thread thread_;
};

}  // namespace denormd::http
