#include "http/web_config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "http/basic_auth.h"
#include "http/yaml_node.h"

namespace denormd::http {

namespace {

using names = std::vector<std::string_view>;

// The headers exporter-toolkit lets a file set, with the values it accepts (none listed: any).
const std::vector<std::pair<std::string_view, names>>& settable_headers() {
  static const std::vector<std::pair<std::string_view, names>> all = {
      {"Content-Security-Policy", {}},
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
  };
  return all;
}

std::string joined(const names& list, std::string_view sep = ", ") {
  std::string out;
  for (const auto& n : list)
    out += (out.empty() ? "" : std::string(sep)) + std::string(n);
  return out;
}

std::string settable_names() {
  names all;
  for (const auto& h : settable_headers())
    all.push_back(h.first);
  return joined(all);
}

// The keys a section takes, and the ones exporter-toolkit's format has there that denormd
// does not take.
struct section_keys {
  names supported;
  names not_supported;
};

// Reads one web config file; every error names the file, the line and the key.
class reader {
 public:
  explicit reader(const std::string& path) : path_(path) {
    const auto slash = path.rfind('/');
    folder_ = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  }

  expected<web_config> read(const yaml_node& root) {
    web_config out;
    if (root.type == yaml_node::kind::null) return out;  // an empty file: nothing to do
    if (root.type != yaml_node::kind::mapping)
      return error(root, "",
                   "must be a mapping of tls_server_config, basic_auth_users and "
                   "http_server_config");
    if (auto st = check_keys(
            root, "",
            {{"tls_server_config", "basic_auth_users", "http_server_config"}, {"rate_limit"}});
        !st)
      return st.error();
    // Null or {}: no TLS, as exporter-toolkit takes them.
    if (const auto* tls = root.find("tls_server_config");
        tls != nullptr && tls->type != yaml_node::kind::null &&
        !(tls->type == yaml_node::kind::mapping && tls->entries.empty())) {
      auto settings = read_tls(*tls);
      if (!settings) return settings.error();
      out.tls = std::move(settings).value();
    }
    if (const auto* users = root.find("basic_auth_users")) {
      if (auto st = read_users(*users, out); !st) return st.error();
    }
    if (const auto* http = root.find("http_server_config")) {
      if (auto st = read_http(*http, out); !st) return st.error();
    }
    return out;
  }

 private:
  denormd::unexpected<denormd::error> error(const yaml_node& at, std::string_view key,
                                            std::string_view problem) const {
    return fail(path_ + ":" + std::to_string(at.line) + ": " +
                (key.empty() ? std::string() : std::string(key) + ": ") + std::string(problem));
  }

  static std::string key_path(std::string_view section, std::string_view key) {
    return section.empty() ? std::string(key) : std::string(section) + "." + std::string(key);
  }

  status check_keys(const yaml_node& map, std::string_view section, const section_keys& k) const {
    for (const auto& [key, value] : map.entries) {
      const auto in = [&](const names& list) {
        return std::find(list.begin(), list.end(), key) != list.end();
      };
      if (in(k.supported)) continue;
      if (in(k.not_supported))
        return error(value, key_path(section, key),
                     "not supported by denormd (it takes " + joined(k.supported) + ")");
      return error(value, key_path(section, key),
                   "unknown key; allowed here: " + joined(k.supported));
    }
    return {};
  }

  // A scalar's text; nullopt for null (absent); an error for a mapping or a sequence.
  expected<std::optional<std::string>> text_of(const yaml_node& n, const std::string& key) const {
    if (n.type == yaml_node::kind::null) return std::optional<std::string>();
    if (n.type != yaml_node::kind::scalar) return error(n, key, "must be a string");
    return std::optional<std::string>(n.text);
  }

  std::string quoted(std::string_view v) const { return "\"" + std::string(v) + "\""; }

  expected<tls_settings> read_tls(const yaml_node& tls);
  status read_tls_strings(const yaml_node& tls, tls_settings& out, std::string& auth_type);
  status read_users(const yaml_node& users, web_config& out) const;
  status read_http(const yaml_node& http, web_config& out) const;

  std::string resolved(const std::string& file) const {
    return file.empty() || file.front() == '/' ? file : folder_ + file;
  }

  const std::string path_;
  std::string folder_;  // with its trailing '/'; "" for the working directory
};

expected<tls_version> version_of(const std::string& v) {
  if (v == "TLS12") return tls_version::tls12;
  if (v == "TLS13") return tls_version::tls13;
  if (v == "TLS10" || v == "TLS11")
    return fail("must be TLS12 or TLS13 (denormd supports nothing older), not \"" + v + "\"");
  return fail("must be TLS12 or TLS13, not \"" + v + "\"");
}

status reader::read_tls_strings(const yaml_node& tls, tls_settings& out, std::string& auth_type) {
  for (const auto& [key, value] : tls.entries) {
    const std::string where = key_path("tls_server_config", key);
    auto v = text_of(value, where);
    if (!v) return v.error();
    if (!v->has_value()) continue;
    const std::string& s = **v;
    if (key == "cert_file") out.cert_file = resolved(s);
    if (key == "key_file") out.key_file = resolved(s);
    if (key == "client_ca_file") out.client_ca_file = resolved(s);
    if (key == "client_auth_type") auth_type = s;
    if (key == "min_version" || key == "max_version") {
      auto version = version_of(s);
      if (!version) return error(value, where, version.error().message);
      (key == "min_version" ? out.min_version : out.max_version) = *version;
    }
  }
  return {};
}

expected<tls_settings> reader::read_tls(const yaml_node& tls) {
  if (tls.type != yaml_node::kind::mapping)
    return error(tls, "tls_server_config", "must be a mapping");
  if (auto st = check_keys(tls, "tls_server_config",
                           {{"cert_file", "key_file", "client_auth_type", "client_ca_file",
                             "min_version", "max_version"},
                            {"cert", "key", "client_ca", "client_allowed_sans", "cipher_suites",
                             "prefer_server_cipher_suites", "curve_preferences"}});
      !st)
    return st.error();
  tls_settings out;
  std::string auth_type = "NoClientCert";
  if (auto st = read_tls_strings(tls, out, auth_type); !st) return st.error();
  const auto at = [&](std::string_view key) -> const yaml_node& {
    return tls.find(key) != nullptr ? *tls.find(key) : tls;
  };
  if (out.cert_file.empty()) return error(tls, "tls_server_config", "cert_file is missing");
  if (out.key_file.empty()) return error(tls, "tls_server_config", "key_file is missing");
  if (auth_type == "RequireAndVerifyClientCert") {
    out.require_client_cert = true;
  } else if (auth_type == "RequestClientCert" || auth_type == "RequireAnyClientCert" ||
             auth_type == "RequireClientCert" || auth_type == "VerifyClientCertIfGiven") {
    return error(at("client_auth_type"), "tls_server_config.client_auth_type",
                 quoted(auth_type) +
                     " is not supported by denormd (it takes NoClientCert or "
                     "RequireAndVerifyClientCert)");
  } else if (auth_type != "NoClientCert") {
    return error(at("client_auth_type"), "tls_server_config.client_auth_type",
                 "must be NoClientCert or RequireAndVerifyClientCert, not " + quoted(auth_type));
  }
  if (out.require_client_cert && out.client_ca_file.empty())
    return error(tls, "tls_server_config",
                 "client_auth_type RequireAndVerifyClientCert needs client_ca_file");
  if (!out.require_client_cert && !out.client_ca_file.empty())
    return error(at("client_ca_file"), "tls_server_config.client_ca_file",
                 "is used only with client_auth_type RequireAndVerifyClientCert");
  if (out.min_version > out.max_version)
    return error(at("min_version"), "tls_server_config.min_version", "is above max_version");
  return out;
}

status reader::read_users(const yaml_node& users, web_config& out) const {
  if (users.type == yaml_node::kind::null) return {};
  if (users.type != yaml_node::kind::mapping)
    return error(users, "basic_auth_users", "must be a mapping of user names to bcrypt hashes");
  for (const auto& [name, value] : users.entries) {
    const std::string where = key_path("basic_auth_users", name);
    if (name.empty() || name.find(':') != std::string::npos)
      return error(value, "basic_auth_users",
                   "user name " + quoted(name) + " is empty or holds a ':' (RFC 7617)");
    if (value.type != yaml_node::kind::scalar)
      return error(value, where, "must be a bcrypt hash (the value is not shown)");
    if (const auto problem = basic_auth::hash_problem(value.text); !problem.empty())
      return error(value, where, problem + " (the value is not shown)");
    out.users.emplace(name, value.text);
  }
  return {};
}

status reader::read_http(const yaml_node& http, web_config& out) const {
  if (http.type == yaml_node::kind::null) return {};
  if (http.type != yaml_node::kind::mapping)
    return error(http, "http_server_config", "must be a mapping");
  if (auto st = check_keys(http, "http_server_config", {{"headers", "http2"}, {}}); !st)
    return st.error();
  // HTTP/2 is an option of the format; denormd serves HTTP/1.1 whatever it says.
  if (const auto* h2 = http.find("http2");
      h2 != nullptr && !(h2->plain && (h2->text == "true" || h2->text == "false")))
    return error(*h2, "http_server_config.http2", "must be true or false, not " + quoted(h2->text));
  const auto* headers = http.find("headers");
  if (headers == nullptr || headers->type == yaml_node::kind::null) return {};
  if (headers->type != yaml_node::kind::mapping)
    return error(*headers, "http_server_config.headers", "must be a mapping");
  for (const auto& [name, value] : headers->entries) {
    const std::string where = key_path("http_server_config.headers", name);
    const auto known = std::find_if(settable_headers().begin(), settable_headers().end(),
                                    [&](const auto& h) { return h.first == name; });
    if (known == settable_headers().end())
      return error(value, where, "cannot be set; the headers that can: " + settable_names());
    auto v = text_of(value, where);
    if (!v) return v.error();
    if (!v->has_value() || (*v)->empty()) continue;  // blank: unset
    const std::string& s = **v;
    if (!known->second.empty() &&
        std::find(known->second.begin(), known->second.end(), s) == known->second.end())
      return error(value, where, "must be " + joined(known->second, " or ") + ", not " + quoted(s));
    if (std::any_of(s.begin(), s.end(), [](char c) { return c >= 0 && c < ' '; }))
      return error(value, where, "holds a control character");
    out.headers.emplace_back(name, s);
  }
  return {};
}

}  // namespace

expected<web_config> parse_web_config(std::string_view text, const std::string& path) {
  auto root = parse_yaml(text);
  if (!root) return fail(path + ": " + root.error().message);
  return reader(path).read(*root);
}

expected<web_config> load_web_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(path + ": cannot read the web config file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(path + ": cannot read the web config file");
  return parse_web_config(text.str(), path);
}

}  // namespace denormd::http
