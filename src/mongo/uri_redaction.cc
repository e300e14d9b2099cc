#include "mongo/uri_redaction.h"

#include <algorithm>
#include <array>
#include <mutex>
#include <optional>

#include "common/json_text.h"

namespace denormd::mongo {

namespace {

constexpr std::string_view hidden = "****";
// Shorter secrets are not searched for in free text: they would match ordinary words.
constexpr std::size_t min_secret_length = 3;

// Options whose values are printed as they are.
constexpr std::array<std::string_view, 49> safe_options = {
    "appname",
    "authmechanism",
    "authsource",
    "canonicalizehostname",
    "compressors",
    "connecttimeoutms",
    "directconnection",
    "gssapiservicename",
    "heartbeatfrequencyms",
    "journal",
    "loadbalanced",
    "localthresholdms",
    "maxidletimems",
    "maxpoolsize",
    "maxstalenessseconds",
    "minpoolsize",
    "readconcernlevel",
    "readpreference",
    "readpreferencetags",
    "replicaset",
    "retryreads",
    "retrywrites",
    "safe",
    "serverselectiontimeoutms",
    "serverselectiontryonce",
    "slaveok",
    "socketcheckintervalms",
    "sockettimeoutms",
    "srvmaxhosts",
    "srvservicename",
    "ssl",
    "sslallowinvalidcertificates",
    "sslallowinvalidhostnames",
    "sslcertificateauthorityfile",
    "sslclientcertificatekeyfile",
    "tls",
    "tlsallowinvalidcertificates",
    "tlsallowinvalidhostnames",
    "tlscafile",
    "tlscertificatekeyfile",
    "tlsdisablecertificaterevocationcheck",
    "tlsdisableocspendpointcheck",
    "tlsinsecure",
    "w",
    "waitqueuemultiple",
    "waitqueuetimeoutms",
    "wtimeoutms",
    "zlibcompressionlevel",
    "maxconnecting",
};
// Options whose values are secrets; authMechanismProperties keeps its property names.
constexpr std::string_view mechanism_properties = "authmechanismproperties";
constexpr std::array<std::string_view, 2> secret_options = {"tlscertificatekeyfilepassword",
                                                            "sslclientcertificatekeypassword"};
// Words that make an unknown option's value a secret.
constexpr std::array<std::string_view, 4> secret_words = {"password", "secret", "token", "key"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Percent-decoding as the driver does it; a malformed escape is kept as written.
std::string decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool contains(std::span<const std::string_view> list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

bool is_known_option(std::string_view lowered) {
  return contains(safe_options, lowered) || contains(secret_options, lowered) ||
         lowered == mechanism_properties;
}

bool names_a_secret(std::string_view lowered) {
  return std::any_of(secret_words.begin(), secret_words.end(),
                     [&](std::string_view w) { return lowered.find(w) != std::string_view::npos; });
}

std::optional<std::size_t> scheme_length(std::string_view uri) {
  for (std::string_view scheme :
       {std::string_view("mongodb://"), std::string_view("mongodb+srv://")})
    if (uri.size() >= scheme.size() && lower(uri.substr(0, scheme.size())) == scheme)
      return scheme.size();
  return std::nullopt;
}

struct uri_option {
  std::string_view name;
  std::string_view value;
  bool has_value = false;
};

// A connection string cut where the driver cuts it, except that credentials are assumed to
// run to the last '@' (a password with an unescaped '@', '/' or '?' stays in them).
struct uri_parts {
  std::string_view scheme;
  bool has_userinfo = false;
  std::string_view user;
  bool has_password = false;
  std::string_view password;
  std::string_view hosts;
  std::string_view path;  // with its leading '/', or empty
  bool has_query = false;
  std::vector<uri_option> options;
};

std::vector<uri_option> split_options(std::string_view query) {
  std::vector<uri_option> out;
  while (!query.empty()) {
    const auto end = query.find_first_of("&;");
    const std::string_view item = query.substr(0, end);
    query = end == std::string_view::npos ? std::string_view() : query.substr(end + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      out.push_back({item, {}, false});
    } else {
      out.push_back({item.substr(0, eq), item.substr(eq + 1), true});
    }
  }
  return out;
}

std::optional<uri_parts> split_uri(std::string_view uri) {
  const auto scheme = scheme_length(uri);
  if (!scheme) return std::nullopt;
  uri_parts p;
  p.scheme = uri.substr(0, *scheme);
  std::string_view rest = uri.substr(*scheme);
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    p.has_userinfo = true;
    const auto colon = userinfo.find(':');
    p.user = userinfo.substr(0, colon);
    if (colon != std::string_view::npos) {
      p.has_password = true;
      p.password = userinfo.substr(colon + 1);
    }
    rest = rest.substr(at + 1);
  }
  const auto hosts_end = rest.find_first_of("/?");
  p.hosts = rest.substr(0, hosts_end);
  rest = hosts_end == std::string_view::npos ? std::string_view() : rest.substr(hosts_end);
  const auto query = rest.find('?');
  p.path = rest.substr(0, query);
  p.has_query = query != std::string_view::npos;
  if (p.has_query) p.options = split_options(rest.substr(query + 1));
  return p;
}

// "host:port" with a port that is not a number is not a host the driver accepts; what follows
// the ':' may be a password written without its '@'.
std::string redact_host(std::string_view host) {
  const auto bracket = host.find(']');
  const auto colon = host.find(':', bracket == std::string_view::npos ? 0 : bracket);
  if (colon == std::string_view::npos) return std::string(host);
  const std::string_view port = host.substr(colon + 1);
  const bool numeric = !port.empty() && std::all_of(port.begin(), port.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) return std::string(host);
  return std::string(host.substr(0, colon)) + ":" + std::string(hidden);
}

std::string redact_hosts(std::string_view hosts) {
  std::string out;
  while (true) {
    const auto comma = hosts.find(',');
    out += redact_host(hosts.substr(0, comma));
    if (comma == std::string_view::npos) break;
    out += ',';
    hosts = hosts.substr(comma + 1);
  }
  return out;
}

std::string redact_mechanism_properties(std::string_view value) {
  std::string out;
  bool first = true;
  while (true) {
    const auto comma = value.find(',');
    const std::string_view item = value.substr(0, comma);
    if (!first) out += ',';
    first = false;
    const auto colon = item.find(':');
    const std::string_view name = item.substr(0, colon);
    const bool named = colon != std::string_view::npos && is_identifier(name);
    out += named ? std::string(name) + ":" + std::string(hidden) : std::string(hidden);
    if (comma == std::string_view::npos) break;
    value = value.substr(comma + 1);
  }
  return out;
}

// One option as printed. `after_secret`: the previous item held a secret or may have been
// part of one, so an unknown item here may be the rest of a secret with an unescaped '&'.
std::string redact_option(const uri_option& o, bool& after_secret) {
  const std::string name = lower(decode(o.name));
  const std::string value_suffix = o.has_value ? "=" + std::string(hidden) : "";
  if (contains(safe_options, name)) {
    after_secret = false;
    return std::string(o.name) + (o.has_value ? "=" + std::string(o.value) : "");
  }
  if (name == mechanism_properties) {
    after_secret = true;
    return std::string(o.name) + (o.has_value ? "=" + redact_mechanism_properties(o.value) : "");
  }
  if (contains(secret_options, name)) {
    after_secret = true;
    return std::string(o.name) + value_suffix;
  }
  // A name without a value is no option: it may be a fragment of a secret.
  if (after_secret || !o.has_value || !is_identifier(o.name)) return std::string(hidden);
  after_secret = names_a_secret(name);
  return std::string(o.name) + value_suffix;
}

void add_unique(std::vector<std::string>& to, std::vector<std::string>&& from) {
  for (auto& s : from)
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(std::move(s));
}

void add_secret(std::vector<std::string>& out, std::string_view raw) {
  std::vector<std::string> both;
  for (std::string s : {std::string(raw), decode(raw)})
    if (s.size() >= min_secret_length) both.push_back(std::move(s));
  add_unique(out, std::move(both));
}

// Brackets and parentheses do not end it: an IPv6 host is written in brackets, and what
// followed a cut there would be printed as it is.
bool is_uri_end(char c) {
  return static_cast<unsigned char>(c) <= 0x20 || c == '"' || c == '\'' || c == '`';
}

// Every secret replaced, longest first (a secret may contain a shorter one).
std::string replace_secrets(std::string text, std::span<const std::string> secrets) {
  std::vector<std::string_view> sorted(secrets.begin(), secrets.end());
  std::sort(sorted.begin(), sorted.end(),
            [](std::string_view a, std::string_view b) { return a.size() > b.size(); });
  for (std::string_view s : sorted) {
    if (s.size() < min_secret_length) continue;
    for (auto pos = text.find(s); pos != std::string::npos; pos = text.find(s, pos + hidden.size()))
      text.replace(pos, s.size(), hidden);
  }
  return text;
}

// Each embedded connection string (up to a space or a quote) replaced by its redacted form.
std::string replace_uris(std::string_view text) {
  std::string out;
  const std::string lowered = lower(text);
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto start = lowered.find("mongodb", pos);
    if (start == std::string::npos || !scheme_length(text.substr(start))) {
      const auto next = start == std::string::npos ? text.size() : start + 1;
      out.append(text.substr(pos, next - pos));
      pos = next;
      continue;
    }
    out.append(text.substr(pos, start - pos));
    auto end = start;
    while (end < text.size() && !is_uri_end(text[end]))
      ++end;
    while (end > start && (text[end - 1] == ',' || text[end - 1] == '.' || text[end - 1] == ';'))
      --end;  // punctuation of the sentence around it
    out += redact_uri(text.substr(start, end - start));
    pos = end;
  }
  return out;
}

bool may_stay_quoted(std::string_view inner, std::span<const std::string> shown_names) {
  const std::string name = lower(inner);
  return inner.empty() || inner == "=" || is_known_option(name) || name == "mongodb://" ||
         name == "mongodb+srv://" ||
         std::find(shown_names.begin(), shown_names.end(), name) != shown_names.end();
}

// What every URI opened so far must not show, and the option names redact_uri shows.
struct registry {
  std::mutex mutex;
  std::vector<std::string> secrets;      // guarded by mutex
  std::vector<std::string> shown_names;  // likewise
};

registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

std::string redact_uri(std::string_view uri) {
  const auto p = split_uri(uri);
  if (!p) return "(not a mongodb:// or mongodb+srv:// URI)";
  std::string out(p->scheme);
  if (p->has_userinfo) {
    const bool plain_user = p->user.find_first_of("/?#&=;@") == std::string_view::npos;
    out += plain_user ? std::string(p->user) : std::string(hidden);
    if (p->has_password) out += ":" + std::string(hidden);
    out += '@';
  }
  out += redact_hosts(p->hosts);
  out += p->path;
  if (p->options.empty()) {
    if (p->has_query) out += '?';
    return out;
  }
  bool after_secret = false;
  char separator = '?';
  for (const auto& o : p->options) {
    out += separator;
    separator = '&';
    out += redact_option(o, after_secret);
  }
  return out;
}

std::vector<std::string> uri_secrets(std::string_view uri) {
  std::vector<std::string> out;
  const auto p = split_uri(uri);
  if (!p) {
    add_secret(out, uri);  // not a URI: all of it may be a secret
    return out;
  }
  if (p->has_password) add_secret(out, p->password);
  for (const auto& o : p->options) {
    const std::string name = lower(decode(o.name));
    if (name == mechanism_properties) {
      add_secret(out, o.value);
      for (std::string_view v = o.value; !v.empty();) {
        const auto comma = v.find(',');
        const std::string_view item = v.substr(0, comma);
        if (const auto colon = item.find(':'); colon != std::string_view::npos)
          add_secret(out, item.substr(colon + 1));
        v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
      }
    } else if (contains(secret_options, name) || (!is_known_option(name) && names_a_secret(name))) {
      add_secret(out, o.value);
    }
  }
  return out;
}

std::string redact_text(std::string_view text, std::span<const std::string> secrets) {
  return replace_uris(replace_secrets(std::string(text), secrets));
}

std::vector<std::string> uri_shown_option_names(std::string_view uri) {
  std::vector<std::string> out;
  const auto p = split_uri(uri);
  if (!p) return out;
  bool after_secret = false;
  for (const auto& o : p->options) {
    if (redact_option(o, after_secret) != hidden) out.push_back(lower(decode(o.name)));
  }
  return out;
}

std::string redact_uri_message(std::string_view text, std::span<const std::string> secrets,
                               std::span<const std::string> shown_names) {
  const std::string cleaned = redact_text(text, secrets);
  std::string out;
  std::size_t pos = 0;
  while (pos < cleaned.size()) {
    const auto open = cleaned.find_first_of("\"'", pos);
    if (open == std::string::npos) {
      out.append(cleaned, pos);
      break;
    }
    out.append(cleaned, pos, open - pos + 1);
    const auto close = cleaned.find(cleaned[open], open + 1);
    if (close == std::string::npos) {  // unterminated: the rest may be the value
      out += hidden;
      break;
    }
    const std::string_view inner(cleaned.data() + open + 1, close - open - 1);
    out += may_stay_quoted(inner, shown_names) ? std::string(inner) : std::string(hidden);
    out += cleaned[close];
    pos = close + 1;
  }
  return out;
}

void remember_uri_secrets(std::string_view uri) {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  add_unique(r.secrets, uri_secrets(uri));
  add_unique(r.shown_names, uri_shown_option_names(uri));
}

std::string redact_known_secrets(std::string_view text) {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  return redact_text(text, r.secrets);
}

std::string redact_known_uri_message(std::string_view text) {
  registry& r = the_registry();
  std::lock_guard lock(r.mutex);
  return redact_uri_message(text, r.secrets, r.shown_names);
}

}  // namespace denormd::mongo
