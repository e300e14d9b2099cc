#pragma once
// The OpenSSL context of an HTTPS port, made from a web config file's tls_server_config
// (http/web_config.h): its certificate chain and key, the TLS versions, and with
// RequireAndVerifyClientCert the CA that client certificates must chain to.
//
// Thread-safety: make_tls_context() is pure but for reading the files; a context is shared by
// the connections made with it (OpenSSL's SSL_CTX is safe for that once set up).

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "common/expected.h"
#include "http/web_config.h"

namespace denormd::http {

// Errors name the config file, the key and the file it names, with OpenSSL's reason
// ("web.yml: tls_server_config.cert_file: cannot load \"cert.pem\": no start line").
expected<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(
    const tls_settings& settings, const std::string& config_path);

}  // namespace denormd::http
