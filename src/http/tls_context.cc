#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace denormd::http {

namespace ssl = boost::asio::ssl;
using error_code = boost::system::error_code;

namespace {

int openssl_version(tls_version v) {
  return v == tls_version::tls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

// Why `file` cannot be read ("No such file or directory"); "" when it can.
std::string unreadable(const std::string& file) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) return std::strerror(errno);
  std::fclose(f);
  return "";
}

// OpenSSL's words for an error of Asio's ssl category ("PEM routines::no start line").
std::string reason(const error_code& ec) {
  if (ec.category() != boost::asio::error::get_ssl_category()) return ec.message();
  std::array<char, 256> text{};
  ERR_error_string_n(static_cast<unsigned long>(ec.value()), text.data(), text.size());
  std::string out = text.data();
  // "error:0480006C:PEM routines::no start line": the part after the code.
  if (const auto code_end = out.find(':', out.find(':') + 1); code_end != std::string::npos)
    out = out.substr(code_end + 1);
  return out;
}

}  // namespace

expected<std::shared_ptr<ssl::context>> make_tls_context(const tls_settings& s,
                                                         const std::string& config_path) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  const auto failed = [&](std::string_view key, const std::string& file, const error_code& ec) {
    const std::string why = unreadable(file);
    return fail(config_path + ": tls_server_config." + std::string(key) + ": cannot load \"" +
                file + "\": " + (why.empty() ? reason(ec) : why));
  };
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, openssl_version(s.min_version));
  SSL_CTX_set_max_proto_version(native, openssl_version(s.max_version));
  // No compression (CRIME), no client-initiated renegotiation (a cheap way to make the
  // server work), the server's cipher order.
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  error_code ec;
  if (ctx->use_certificate_chain_file(s.cert_file, ec); ec)
    return failed("cert_file", s.cert_file, ec);
  ctx->use_private_key_file(s.key_file, ssl::context::pem, ec);
  const bool mismatch =
      ec && ec.category() == boost::asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) return failed("key_file", s.key_file, ec);
  if (mismatch || SSL_CTX_check_private_key(native) != 1)
    return fail(config_path + ": tls_server_config.key_file: \"" + s.key_file +
                "\" is not the key of cert_file \"" + s.cert_file + "\"");
  if (s.require_client_cert) {
    if (ctx->load_verify_file(s.client_ca_file, ec); ec)
      return failed("client_ca_file", s.client_ca_file, ec);
    // The CAs a client may choose its certificate by.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.client_ca_file.c_str()))
      SSL_CTX_set_client_CA_list(native, names);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    // Resumed sessions with client certificates need an id context of the server's.
    static constexpr unsigned char id[] = "denormd";
    SSL_CTX_set_session_id_context(native, id, sizeof(id) - 1);
  }
  return ctx;
}

}  // namespace denormd::http
