// mongo-emulator [--host 127.0.0.1] [--port P] [--rs-name rs0] [--oplog-max-events N]
//                [--threads N] [--auth]
// Prints "listening on HOST:PORT" as its first stdout line once it accepts connections;
// SIGTERM or SIGINT stops it cleanly (exit 0).

#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "server.h"

namespace {

constexpr const char* usage =
    "usage: mongo-emulator [--host 127.0.0.1] [--port 27017] [--rs-name rs0]\n"
    "                      [--oplog-max-events 1000000] [--threads N]\n"
    "                      [--transaction-lifetime-limit-seconds 60]\n"
    "                      [--setParameter internalChangeStreamRespectsReadPreference=true]\n"
    "                      [--auth] [--setParameter enableLocalhostAuthBypass=false]\n";

template <class T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<mongo_emulator::server_options> parse_args(int argc, char** argv) {
  mongo_emulator::server_options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return std::nullopt;
    if (arg == "--auth") {  // the one flag without a value
      o.auth = true;
      continue;
    }
    if (i + 1 >= argc) return std::nullopt;
    const std::string value = argv[++i];
    if (arg == "--host") {
      o.host = value;
    } else if (arg == "--port") {
      auto p = parse_number<std::uint16_t>(value);
      if (!p) return std::nullopt;
      o.port = *p;
    } else if (arg == "--rs-name") {
      o.rs_name = value;
    } else if (arg == "--oplog-max-events") {
      auto n = parse_number<std::size_t>(value);
      if (!n || *n == 0) return std::nullopt;
      o.oplog_max_events = *n;
    } else if (arg == "--transaction-lifetime-limit-seconds") {
      auto n = parse_number<unsigned>(value);
      if (!n || *n == 0) return std::nullopt;
      o.transaction_lifetime = std::chrono::seconds(*n);
    } else if (arg == "--setParameter") {
      // The server parameters the emulator knows at startup (server_options says what they do).
      if (value == "internalChangeStreamRespectsReadPreference=true") {
        o.change_streams_respect_read_preference = true;
      } else if (value == "enableLocalhostAuthBypass=false" ||
                 value == "enableLocalhostAuthBypass=true") {
        o.localhost_auth_bypass = value.ends_with("true");
      } else if (value != "internalChangeStreamRespectsReadPreference=false") {
        return std::nullopt;
      }
    } else if (arg == "--threads") {
      auto n = parse_number<unsigned>(value);
      if (!n) return std::nullopt;
      o.threads = *n;
    } else {
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = parse_args(argc, argv);
  if (!options) {
    std::fputs(usage, stderr);
    return 2;
  }
  try {
    mongo_emulator::server server(*options);
    const auto port = server.listen();
    boost::asio::signal_set signals(server.io(), SIGTERM, SIGINT);
    signals.async_wait([&server](const boost::system::error_code& ec, int) {
      if (!ec) server.stop();
    });
    std::signal(SIGPIPE, SIG_IGN);
    std::cout << "listening on " << options->host << ":" << port << std::endl;
    server.run();
  } catch (const std::exception& e) {
    std::cerr << "mongo-emulator: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
