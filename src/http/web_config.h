#pragma once
// The web config file of `denormd run --web-config-file` (docs/operations.md, "Securing the
// HTTP port"): TLS and basic auth for the HTTP port in the format of Prometheus'
// exporter-toolkit (docs/web-configuration.md there), so one file works for denormd and the
// exporters beside it. denormd takes a subset: the keys of that format it does not take are
// refused by name ("not supported by denormd"), any other key as unknown, so that nothing
// in the file is silently ignored.
//
// Lifecycle: a value, parsed once per read of the file. Thread-safety: none needed.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/expected.h"

namespace denormd::http {

enum class tls_version { tls12, tls13 };

// tls_server_config. File names are resolved against the config file's folder, as
// exporter-toolkit does.
struct tls_settings {
  std::string cert_file;
  std::string key_file;
  // client_auth_type RequireAndVerifyClientCert: a client must present a certificate signed
  // by client_ca_file. (NoClientCert, the default: none is asked for.)
  bool require_client_cert = false;
  std::string client_ca_file;
  tls_version min_version = tls_version::tls12;
  tls_version max_version = tls_version::tls13;
};

struct web_config {
  std::optional<tls_settings> tls;           // none: plain HTTP
  std::map<std::string, std::string> users;  // basic_auth_users, name -> bcrypt hash; none: open
  std::vector<std::pair<std::string, std::string>> headers;  // http_server_config.headers
};

// `text` is the content of the file named `path`. An error names the file, the line, the
// key and the value ("web.yml:4: tls_server_config.min_version: must be TLS12 or TLS13, not
// \"TLS11\""), except a password hash's, which is never shown (it may be a pasted password).
expected<web_config> parse_web_config(std::string_view text, const std::string& path);

// Reads and parses the file.
expected<web_config> load_web_config(const std::string& path);

}  // namespace denormd::http
