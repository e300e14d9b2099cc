#include "http/http_get.h"

#include <openssl/evp.h>

#include <optional>
#include <type_traits>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace denormd::http {

namespace {

namespace beast = boost::beast;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct parsed_url {
  bool tls = false;
  std::string host;
  std::string port;
  std::string target = "/";
  std::string credentials;  // user:password, as given
};

std::optional<parsed_url> parse_url(const std::string& url) {
  parsed_url out;
  std::string rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    out.tls = true;
  } else {
    return std::nullopt;
  }
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) out.target = rest.substr(slash);
  if (const std::size_t at = authority.rfind('@'); at != std::string::npos) {
    out.credentials = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  out.port = out.tls ? "443" : "80";
  if (authority.starts_with('[')) {  // [::1]:9464
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return std::nullopt;
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return std::nullopt;
      out.port = authority.substr(close + 2);
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string::npos) {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  } else {
    out.host = authority;
  }
  if (out.host.empty() || out.port.empty()) return std::nullopt;
  return out;
}

std::string base64(const std::string& text) {
  std::vector<unsigned char> out(4 * ((text.size() + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  return std::string(reinterpret_cast<const char*>(out.data()), static_cast<std::size_t>(n));
}

// One exchange over `stream` (plain or TLS), each step started when the one before ended,
// all of them under the deadline set on its lowest layer: connect, the TLS handshake, the
// request, the answer. Runs `io` until done; the answer's body or why there is none.
template <class Stream>
expected<std::string> exchange(asio::io_context& io, Stream& stream,
                               const tcp::resolver::results_type& addresses, const parsed_url& u,
                               const std::string& shown) {
  beast::http::request<beast::http::empty_body> req{beast::http::verb::get, u.target, 11};
  req.set(beast::http::field::host, u.host);
  req.set(beast::http::field::user_agent, "denormd");
  if (!u.credentials.empty())
    req.set(beast::http::field::authorization, "Basic " + base64(u.credentials));
  beast::flat_buffer buffer;
  beast::http::response_parser<beast::http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  beast::error_code failed;
  std::string step;
  auto read = [&](beast::error_code ec, std::size_t) {
    if (ec) failed = ec;
  };
  auto write = [&](beast::error_code ec, std::size_t) {
    if (ec) return void(failed = ec);
    beast::http::async_read(stream, buffer, parser, read);
  };
  auto send = [&] { beast::http::async_write(stream, req, write); };
  beast::get_lowest_layer(stream).async_connect(
      addresses, [&](beast::error_code ec, const tcp::endpoint&) {
        if (ec) return void(failed = ec);
        if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
          send();
        } else {
          step = "TLS: ";
          stream.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code hs) {
            if (hs) return void(failed = hs);
            step = "";
            send();
          });
        }
      });
  io.run();
  if (failed) return fail("GET " + shown + ": " + step + failed.message());
  const auto& res = parser.get();
  if (res.result() != beast::http::status::ok) {
    return fail("GET " + shown + " answered " + std::to_string(res.result_int()) + " " +
                std::string(res.reason()));
  }
  return res.body();
}

}  // namespace

std::string url_without_credentials(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const std::size_t start = scheme + 3;
  const std::size_t slash = url.find('/', start);
  const std::size_t at = url.rfind('@', slash == std::string::npos ? url.size() : slash);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + url.substr(at + 1);
}

expected<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout) {
  const std::string shown = url_without_credentials(url);
  const auto u = parse_url(url);
  if (!u) return fail("not an http:// or https:// URL: " + shown);
  asio::io_context io;
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto addresses = resolver.resolve(u->host, u->port, ec);
  if (ec) return fail("GET " + shown + ": cannot resolve " + u->host + ": " + ec.message());
  if (!u->tls) {
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    return exchange(io, stream, addresses, *u, shown);
  }
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
  stream.set_verify_callback(asio::ssl::host_name_verification(u->host));
  // SNI: SSL_set_tlsext_host_name, without its C cast.
  SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(u->host.c_str()));
  beast::get_lowest_layer(stream).expires_after(timeout);
  return exchange(io, stream, addresses, *u, shown);
}

}  // namespace denormd::http
