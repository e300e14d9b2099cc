#pragma once
// The listening server: an Asio io_context run by a few threads, an acceptor coroutine, and one
// connection coroutine per client. Lifecycle: listen(), then run() blocks until stop() (callable
// from any thread or a signal handler on the io_context) and returns once all threads are done.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

#include "command_dispatcher.h"
#include "server_state.h"

namespace mongo_emulator {

class server {
 public:
  explicit server(server_options options);

  // Binds (port 0 picks a free port) and starts accepting; returns the bound port. Start-up
  // failures throw (there is nothing to serve without a socket).
  std::uint16_t listen();
  void run();
  void stop();

  boost::asio::io_context& io() { return io_; }
  server_state& state() { return state_; }

 private:
  boost::asio::awaitable<void> accept_loop();

  // Declared before io_ so that connections (destroyed with io_) never outlive them.
  server_state state_;
  command_dispatcher dispatcher_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace mongo_emulator
