#pragma once
// One client connection: reads a message, runs it through the dispatcher, writes the reply,
// in order, as a coroutine on its own strand. A malformed message closes only this connection
// (with a line on stderr). Lifecycle: started by server on accept, ends with the socket; shared
// ownership keeps it alive while its coroutine runs. Not thread-safe (its strand serializes it).

#include <utility>  // first: Boost 1.74 awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "command.h"
#include "command_dispatcher.h"

namespace mongo_emulator {

class connection {
 public:
  connection(boost::asio::ip::tcp::socket socket, server_state& server,
             command_dispatcher& dispatcher);

  static boost::asio::awaitable<void> run(std::shared_ptr<connection> self);

 private:
  boost::asio::awaitable<void> serve();
  void remember_client(const request& req);
  void log(const std::string& what) const;

  boost::asio::ip::tcp::socket socket_;
  server_state& server_;
  command_dispatcher& dispatcher_;
  connection_info info_;
  std::string peer_;
  std::int32_t next_reply_id_ = 0;
};

}  // namespace mongo_emulator
