#include "http/web_config.h"

#include <gtest/gtest.h>

#include <string>

#include "test_certificates.h"

namespace denormd::http {
namespace {

// A valid bcrypt hash for the files below (its password does not matter here).
const std::string& some_hash() {
  static const std::string h = testing::bcrypt_hash("secret");
  return h;
}

// The error parsing `text` as /etc/denormd/web.yml gives; "" when it parses.
std::string error_of(const std::string& text) {
  auto parsed = parse_web_config(text, "/etc/denormd/web.yml");
  return parsed ? "" : parsed.error().message;
}

TEST(web_config, reads_tls_users_and_headers_resolving_files_against_its_folder) {
  const std::string text =
      "tls_server_config:\n"
      "  cert_file: tls/cert.pem\n"
      "  key_file: /abs/key.pem\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: ca.pem\n"
      "  min_version: TLS13\n"
      "basic_auth_users:\n"
      "  prometheus: " +
      some_hash() +
      "\n"
      "  'ops team': '" +
      some_hash() +
      "'\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    X-Frame-Options: deny\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "    Content-Security-Policy: \"\"\n";
  auto c = parse_web_config(text, "/etc/denormd/web.yml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->cert_file, "/etc/denormd/tls/cert.pem");
  EXPECT_EQ(c->tls->key_file, "/abs/key.pem");
  EXPECT_TRUE(c->tls->require_client_cert);
  EXPECT_EQ(c->tls->client_ca_file, "/etc/denormd/ca.pem");
  EXPECT_EQ(c->tls->min_version, tls_version::tls13);
  EXPECT_EQ(c->tls->max_version, tls_version::tls13);
  ASSERT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users.at("prometheus"), some_hash());
  EXPECT_EQ(c->users.at("ops team"), some_hash());
  // A blank header is unset, as exporter-toolkit takes it.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Frame-Options", "deny"}, {"Strict-Transport-Security", "max-age=31536000"}};
  EXPECT_EQ(c->headers, headers);
}

TEST(web_config, defaults_no_client_cert_and_tls_1_2_to_1_3) {
  auto c =
      parse_web_config("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n", "web.yml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->tls->cert_file, "c.pem");  // a file in the working directory: as it is
  EXPECT_FALSE(c->tls->require_client_cert);
  EXPECT_EQ(c->tls->min_version, tls_version::tls12);
  EXPECT_EQ(c->tls->max_version, tls_version::tls13);
  EXPECT_TRUE(c->users.empty());
}

TEST(web_config, an_empty_file_or_empty_sections_turn_nothing_on) {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\nbasic_auth_users: {}\n",
                           "tls_server_config: {}\nhttp_server_config:\n"}) {
    auto c = parse_web_config(text, "web.yml");
    ASSERT_TRUE(c) << text << ": " << c.error().message;
    EXPECT_FALSE(c->tls) << text;
    EXPECT_TRUE(c->users.empty()) << text;
  }
}

TEST(web_config, an_unknown_key_is_named_with_the_file_line_and_the_keys_allowed) {
  EXPECT_EQ(error_of("tls_server_confg:\n  cert_file: c.pem\n"),
            "/etc/denormd/web.yml:2: tls_server_confg: unknown key; allowed here: "
            "tls_server_config, basic_auth_users, http_server_config");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: c.pem\n  keyfile: k.pem\n"),
            "/etc/denormd/web.yml:3: tls_server_config.keyfile: unknown key; allowed here: "
            "cert_file, key_file, client_auth_type, client_ca_file, min_version, max_version");
  EXPECT_EQ(error_of("http_server_config:\n  header: {}\n"),
            "/etc/denormd/web.yml:2: http_server_config.header: unknown key; allowed here: "
            "headers, http2");
}

TEST(web_config, keys_of_the_format_denormd_does_not_take_are_refused_by_name) {
  EXPECT_EQ(error_of("rate_limit:\n  burst: 5\n"),
            "/etc/denormd/web.yml:2: rate_limit: not supported by denormd (it takes "
            "tls_server_config, basic_auth_users, http_server_config)");
  EXPECT_NE(error_of("tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [x]\n")
                .find("tls_server_config.cipher_suites: not supported by denormd"),
            std::string::npos);
  EXPECT_NE(error_of("tls_server_config:\n  cert: |\n    PEM\n  key_file: k\n")
                .find("tls_server_config.cert: not supported by denormd"),
            std::string::npos);
}

TEST(web_config, bad_tls_values_are_named_with_the_value) {
  const std::string files = "tls_server_config:\n  cert_file: c\n  key_file: k\n";
  EXPECT_EQ(error_of(files + "  min_version: TLS11\n"),
            "/etc/denormd/web.yml:4: tls_server_config.min_version: must be TLS12 or TLS13 "
            "(denormd supports nothing older), not \"TLS11\"");
  EXPECT_EQ(error_of(files + "  max_version: tls13\n"),
            "/etc/denormd/web.yml:4: tls_server_config.max_version: must be TLS12 or TLS13, "
            "not \"tls13\"");
  EXPECT_EQ(error_of(files + "  min_version: TLS13\n  max_version: TLS12\n"),
            "/etc/denormd/web.yml:4: tls_server_config.min_version: is above max_version");
  EXPECT_EQ(error_of(files + "  client_auth_type: RequireAnyClientCert\n"),
            "/etc/denormd/web.yml:4: tls_server_config.client_auth_type: "
            "\"RequireAnyClientCert\" is not supported by denormd (it takes NoClientCert or "
            "RequireAndVerifyClientCert)");
  EXPECT_EQ(error_of(files + "  client_auth_type: Always\n"),
            "/etc/denormd/web.yml:4: tls_server_config.client_auth_type: must be NoClientCert "
            "or RequireAndVerifyClientCert, not \"Always\"");
  EXPECT_EQ(error_of(files + "  cert_file: [a]\n"),
            "/etc/denormd/web.yml: line 4: key \"cert_file\" appears twice");
}

TEST(web_config, tls_needs_its_files_and_client_certificates_need_a_ca) {
  EXPECT_EQ(error_of("tls_server_config:\n  key_file: k\n"),
            "/etc/denormd/web.yml:2: tls_server_config: cert_file is missing");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: c\n  key_file:\n"),
            "/etc/denormd/web.yml:2: tls_server_config: key_file is missing");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: [c]\n  key_file: k\n"),
            "/etc/denormd/web.yml:2: tls_server_config.cert_file: must be a string");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                     "  client_auth_type: RequireAndVerifyClientCert\n"),
            "/etc/denormd/web.yml:2: tls_server_config: client_auth_type "
            "RequireAndVerifyClientCert needs client_ca_file");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n"),
            "/etc/denormd/web.yml:4: tls_server_config.client_ca_file: is used only with "
            "client_auth_type RequireAndVerifyClientCert");
  EXPECT_EQ(error_of("tls_server_config: on\n"),
            "/etc/denormd/web.yml:1: tls_server_config: must be a mapping");
}

TEST(web_config, a_bad_hash_is_named_without_showing_it) {
  const std::string pasted = "correct horse battery staple";
  const std::string e = error_of("basic_auth_users:\n  alice: " + pasted + "\n");
  EXPECT_EQ(e,
            "/etc/denormd/web.yml:2: basic_auth_users.alice: is not a bcrypt hash ($2a$, $2b$ or "
            "$2y$, a cost from 04 to 31, 60 characters) (the value is not shown)");
  EXPECT_EQ(e.find(pasted), std::string::npos);
  // A hash of another scheme (SHA-512 crypt) is not one either.
  EXPECT_NE(error_of("basic_auth_users:\n  alice: $6$salt$abc\n").find("is not a bcrypt hash"),
            std::string::npos);
  EXPECT_EQ(error_of("basic_auth_users:\n  alice: [x]\n"),
            "/etc/denormd/web.yml:2: basic_auth_users.alice: must be a bcrypt hash (the value is "
            "not shown)");
  EXPECT_EQ(error_of("basic_auth_users:\n  'a:b': " + some_hash() + "\n"),
            "/etc/denormd/web.yml:2: basic_auth_users: user name \"a:b\" is empty or holds a ':' "
            "(RFC 7617)");
  EXPECT_EQ(error_of("basic_auth_users: [alice]\n"),
            "/etc/denormd/web.yml:1: basic_auth_users: must be a mapping of user names to bcrypt "
            "hashes");
}

TEST(web_config, headers_are_the_settable_ones_with_their_allowed_values) {
  EXPECT_EQ(error_of("http_server_config:\n  headers:\n    Server: denormd\n"),
            "/etc/denormd/web.yml:3: http_server_config.headers.Server: cannot be set; the "
            "headers that can: Content-Security-Policy, Strict-Transport-Security, "
            "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection");
  EXPECT_EQ(error_of("http_server_config:\n  headers:\n    X-Frame-Options: allow\n"),
            "/etc/denormd/web.yml:3: http_server_config.headers.X-Frame-Options: must be deny or "
            "sameorigin, not \"allow\"");
  EXPECT_EQ(error_of("http_server_config:\n  http2: maybe\n"),
            "/etc/denormd/web.yml:2: http_server_config.http2: must be true or false, not "
            "\"maybe\"");
  EXPECT_NE(error_of("http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nX: y\"\n")
                .find("holds a control character"),
            std::string::npos);
}

TEST(web_config, a_file_that_is_not_a_mapping_or_not_yaml_is_named) {
  EXPECT_EQ(error_of("- a\n- b\n"),
            "/etc/denormd/web.yml:1: must be a mapping of tls_server_config, basic_auth_users "
            "and http_server_config");
  EXPECT_EQ(error_of("a: [\n").rfind("/etc/denormd/web.yml: line 2", 0), 0u) << error_of("a: [\n");
}

TEST(web_config, load_reads_the_file_or_names_why_not) {
  testing::scratch_dir dir;
  const std::string path = dir.write("web.yml", "basic_auth_users:\n  u: " + some_hash() + "\n");
  auto c = load_web_config(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->users.size(), 1u);
  auto missing = load_web_config(dir.file("none.yml"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            dir.file("none.yml") + ": cannot read the web config file: No such file or directory");
}

}  // namespace
}  // namespace denormd::http
