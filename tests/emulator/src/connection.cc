#include "connection.h"

#include <array>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <iostream>
#include <vector>

#include "error_codes.h"

namespace mongo_emulator {

namespace asio = boost::asio;

connection::connection(asio::ip::tcp::socket socket, server_state& server,
                       command_dispatcher& dispatcher)
    : socket_(std::move(socket)), server_(server), dispatcher_(dispatcher) {
  info_.id = server_.next_connection_id();
  boost::system::error_code ec;
  const auto endpoint = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("?")
             : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  info_.loopback = !ec && endpoint.address().is_loopback();
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

asio::awaitable<void> connection::run(std::shared_ptr<connection> self) {
  ++self->server_.open_connections_counter();
  try {
    co_await self->serve();
  } catch (const boost::system::system_error&) {
    // The peer went away: the normal end of a connection.
  } catch (const std::exception& e) {
    // A bug must cost one connection, never the server.
    self->log(std::string("internal error: ") + e.what() + "; closing");
  }
  boost::system::error_code ignored;
  self->socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  self->socket_.close(ignored);
  --self->server_.open_connections_counter();
}

asio::awaitable<void> connection::serve() {
  std::array<std::uint8_t, header_size> header_bytes{};
  std::vector<std::uint8_t> body;
  for (;;) {
    co_await asio::async_read(socket_, asio::buffer(header_bytes), asio::use_awaitable);
    auto header = parse_header(header_bytes);
    if (!header) {
      log("malformed message: " + header.error().message + "; closing");
      co_return;
    }
    body.resize(static_cast<std::size_t>(header->length) - header_size);
    co_await asio::async_read(socket_, asio::buffer(body), asio::use_awaitable);
    auto req = parse_request(*header, body);
    if (!req) {
      log("malformed message: " + req.error().message + "; closing");
      co_return;
    }
    remember_client(*req);
    auto reply = co_await dispatcher_.execute(*req, info_);
    if (!reply) co_return;  // failCommand closeConnection
    if (req->more_to_come) {
      // An unacknowledged write refused by a node that is not primary closes the connection:
      // the client would never hear of it otherwise (MongoDB 4.2+, SERVER-38512).
      const auto* code = reply->get("code");
      if (code != nullptr && code->is_number() &&
          is_not_primary_code(static_cast<int>(code->to_double())))
        co_return;
      continue;
    }
    const auto bytes = encode_reply(*req, ++next_reply_id_, *reply);
    co_await asio::async_write(socket_, asio::buffer(bytes), asio::use_awaitable);
  }
}

void connection::remember_client(const request& req) {
  if (req.command != "hello" && req.command != "isMaster" && req.command != "ismaster") return;
  if (req.command == "hello") info_.said_hello = true;
  const auto* client = req.body.get("client");
  if (client == nullptr || !client->is_document()) return;
  const auto* app = client->as_document().find_path("application.name");
  if (app != nullptr && app->is_string()) info_.app_name = app->as_string();
}

void connection::log(const std::string& what) const {
  std::cerr << "mongo-emulator: connection " << info_.id << " from " << peer_ << ": " << what
            << std::endl;
}

}  // namespace mongo_emulator
