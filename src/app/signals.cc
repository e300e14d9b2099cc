#include "app/signals.h"

#include <csignal>

#include "common/log.h"

namespace denormd::app {

namespace {

void set_stop_signals(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(how, &set, nullptr);
}

}  // namespace

void block_stop_signals() {
  set_stop_signals(SIG_BLOCK);
}

void unblock_stop_signals() {
  set_stop_signals(SIG_UNBLOCK);
}

stop_on_signal::stop_on_signal(std::stop_source stop, std::string component, std::string message,
                               std::function<void()> on_hangup)
    : signals_(io_, SIGINT, SIGTERM), hangups_(io_), on_hangup_(std::move(on_hangup)) {
  signals_.async_wait([stop, component = std::move(component), message = std::move(message)](
                          const boost::system::error_code& ec, int sig) mutable {
    if (ec) return;
    log::info(component, message, {{"signal", sig}});
    stop.request_stop();
  });
  if (on_hangup_) {
    hangups_.add(SIGHUP);
    await_hangup();
  }
  unblock_stop_signals();  // one that came while starting is delivered now
  thread_ = std::thread([this] { io_.run(); });
}

void stop_on_signal::await_hangup() {
  hangups_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    on_hangup_();
    await_hangup();
  });
}

stop_on_signal::~stop_on_signal() {
  io_.stop();
  thread_.join();
}

}  // namespace denormd::app
