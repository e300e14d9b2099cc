#pragma once
// SIGINT/SIGTERM (and SIGHUP) from the first instruction of main() on. main() blocks them
// before anything else, so a signal that arrives while denormd is still starting stays pending
// instead of killing the process; whoever installs the handling (a stop_on_signal) unblocks
// them, and the pending signal is then delivered to it. Commands without their own handling
// unblock them at once and keep the default action. Threads started while they are blocked
// inherit the block, so the signals go to the threads that unblocked them.
// block/unblock: process-wide state, call from the main thread only.

#include <stop_token>
#include <string>
#include <thread>

#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

namespace denormd::app {

void block_stop_signals();
void unblock_stop_signals();

// Turns the first SIGINT/SIGTERM into a stop request on `stop`, logged once as `message` by
// `component`; the default handling comes back when it goes. With `on_hangup`, every SIGHUP
// calls it (on this object's thread; it should only hand the work on), else SIGHUP keeps its
// default action. The one way run and backfill learn of a signal. Lifecycle: constructed on
// the main thread (it unblocks the signals, so one that came while starting is delivered now),
// waits on its own thread, and stops that thread in the destructor. Not copyable.
class stop_on_signal {
 public:
  stop_on_signal(std::stop_source stop, std::string component, std::string message,
                 std::function<void()> on_hangup = {});
  ~stop_on_signal();
  stop_on_signal(const stop_on_signal&) = delete;
  stop_on_signal& operator=(const stop_on_signal&) = delete;

 private:
  boost::asio::io_context io_;
  // Waits for the next SIGHUP.
  void await_hangup();

  boost::asio::signal_set signals_;
  boost::asio::signal_set hangups_;
  std::function<void()> on_hangup_;
  std::thread thread_;
};

}  // namespace denormd::app
