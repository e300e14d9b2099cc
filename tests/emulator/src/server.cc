#include "server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <iostream>
#include <thread>
#include <vector>

#include "connection.h"

namespace mongo_emulator {

namespace asio = boost::asio;

server::server(server_options options)
    : state_(std::move(options)), dispatcher_(state_), acceptor_(io_) {}

std::uint16_t server::listen() {
  const auto& o = state_.options();
  asio::ip::tcp::resolver resolver(io_);
  const auto endpoint = *resolver.resolve(o.host, std::to_string(o.port)).begin();
  acceptor_.open(endpoint.endpoint().protocol());
  acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint.endpoint());
  acceptor_.listen(asio::socket_base::max_listen_connections);
  const std::uint16_t port = acceptor_.local_endpoint().port();
  state_.set_address(o.host + ":" + std::to_string(port));
  asio::co_spawn(io_, accept_loop(), asio::detached);
  return port;
}

asio::awaitable<void> server::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    auto socket = co_await acceptor_.async_accept(asio::make_strand(io_),
                                                  asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: keep serving the existing connections.
      std::cerr << "mongo-emulator: accept failed: " << ec.message() << std::endl;
      asio::steady_timer pause(io_, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    auto executor = socket.get_executor();
    auto conn = std::make_shared<connection>(std::move(socket), state_, dispatcher_);
    asio::co_spawn(executor, connection::run(std::move(conn)), asio::detached);
  }
}

void server::run() {
  unsigned threads = state_.options().threads;
  // More threads than cores: a thread waiting for the storage lock behind a long write must not
  // keep lock-free commands (hello, ping, getMore waits) from being served.
  if (threads == 0) threads = std::max(4U, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : pool)
    t.join();
}

void server::stop() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    io_.stop();
  });
}

}  // namespace mongo_emulator
