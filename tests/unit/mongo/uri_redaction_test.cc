#include "mongo/uri_redaction.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace denormd::mongo {
namespace {

constexpr const char* secret = "S3cr3tPW";

TEST(uri_redaction_test, keeps_what_is_safe) {
  EXPECT_EQ(redact_uri("mongodb://h1/db"), "mongodb://h1/db");
  EXPECT_EQ(redact_uri("mongodb://user@h1/"), "mongodb://user@h1/");
  EXPECT_EQ(redact_uri("mongodb://h1:27017,[::1]:27018/db?replicaSet=rs0&tls=true&w=majority"),
            "mongodb://h1:27017,[::1]:27018/db?replicaSet=rs0&tls=true&w=majority");
  EXPECT_EQ(redact_uri("mongodb+srv://cluster.example.com/?authSource=admin"),
            "mongodb+srv://cluster.example.com/?authSource=admin");
}

TEST(uri_redaction_test, hides_the_password_escaped_or_not) {
  EXPECT_EQ(redact_uri("mongodb://user:s3cret@h1,h2/db?tls=true"),
            "mongodb://user:****@h1,h2/db?tls=true");
  EXPECT_EQ(redact_uri("mongodb+srv://u:p%40ss@cluster/x"), "mongodb+srv://u:****@cluster/x");
  EXPECT_EQ(redact_uri("mongodb://user:S3cr3tPW:x@host/db"), "mongodb://user:****@host/db");
  EXPECT_EQ(redact_uri("mongodb://user:S3cr3tPW%3Ax@host/db"), "mongodb://user:****@host/db");
  // Unescaped '@', '/' and '?' in the password: everything up to the last '@' is userinfo.
  EXPECT_EQ(redact_uri("mongodb://user:S3/cr?3t@PW@host/db"), "mongodb://user:****@host/db");
  EXPECT_EQ(redact_uri("mongodb://user:@host"), "mongodb://user:****@host");
  EXPECT_EQ(redact_uri("mongodb://user:s3cret@h1/db?tlsCertificateKeyFilePassword=s3cret"),
            "mongodb://user:****@h1/db?tlsCertificateKeyFilePassword=****");
}

TEST(uri_redaction_test, hides_secret_option_values) {
  EXPECT_EQ(redact_uri("mongodb://h/?tls=true&tlsCertificateKeyFilePassword=S3cr3tPW"),
            "mongodb://h/?tls=true&tlsCertificateKeyFilePassword=****");
  EXPECT_EQ(redact_uri("mongodb://h/?sslClientCertificateKeyPassword=S3cr3tPW"),
            "mongodb://h/?sslClientCertificateKeyPassword=****");
  EXPECT_EQ(redact_uri("mongodb://h/?TLSCERTIFICATEKEYFILEPASSWORD=S3cr3tPW"),
            "mongodb://h/?TLSCERTIFICATEKEYFILEPASSWORD=****");
  EXPECT_EQ(redact_uri("mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties="
                       "AWS_SESSION_TOKEN:S3cr3tPW,SERVICE_NAME:x"),
            "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties="
            "AWS_SESSION_TOKEN:****,SERVICE_NAME:****");
  // Unknown options keep their names, never their values.
  EXPECT_EQ(redact_uri("mongodb://h/?fooBar=1&myApiToken=S3cr3tPW"),
            "mongodb://h/?fooBar=****&myApiToken=****");
  // Percent-encoded option names are recognized.
  EXPECT_EQ(redact_uri("mongodb://h/?tlsCertificateKeyFile%50assword=S3cr3tPW"),
            "mongodb://h/?tlsCertificateKeyFile%50assword=****");
}

TEST(uri_redaction_test, malformed_uris_print_nothing_they_cannot_prove_safe) {
  // An unescaped '&' in a secret value: what follows may be the rest of it.
  EXPECT_EQ(redact_uri("mongodb://h/?tlsCertificateKeyFilePassword=S3c&r3tPW&appname=a"),
            "mongodb://h/?tlsCertificateKeyFilePassword=****&****&appname=a");
  EXPECT_EQ(redact_uri("mongodb://h/?tlsCertificateKeyFilePassword=S3c&r3t=PW"),
            "mongodb://h/?tlsCertificateKeyFilePassword=****&****");
  // A password written without its '@' reads as a port.
  EXPECT_EQ(redact_uri("mongodb://user:S3cr3tPW/db"), "mongodb://user:****/db");
  EXPECT_EQ(redact_uri("mongodb://[::1]:S3cr3tPW"), "mongodb://[::1]:****");
  // An '@' in an option makes the whole front userinfo; the user part is hidden too when it
  // is not a plain name.
  EXPECT_EQ(redact_uri("mongodb://h/?tlsCertificateKeyFilePassword=S3cr3tPW&appname=a@b"),
            "mongodb://****@b");
  EXPECT_EQ(redact_uri("S3cr3tPW"), "(not a mongodb:// or mongodb+srv:// URI)");
  EXPECT_EQ(redact_uri(""), "(not a mongodb:// or mongodb+srv:// URI)");
  for (const char* uri : {"mongodb://u:S3cr3tPW", "mongodb://u:S3cr3tPW@", "mongodb://:S3cr3tPW@h",
                          "mongodb://h?authMechanismProperties=S3cr3tPW",
                          "mongodb://h/?&=S3cr3tPW&&;=", "mongodb://h/?x=1&S3cr3tPW",
                          "MONGODB://u:S3cr3tPW@h", "mongodb://h,u:S3cr3tPW"}) {
    EXPECT_EQ(redact_uri(uri).find(secret), std::string::npos) << uri << " -> " << redact_uri(uri);
  }
}

TEST(uri_redaction_test, secrets_are_listed_as_written_and_decoded) {
  const auto s = uri_secrets(
      "mongodb://u:S3cr3tPW%3Ax@h/?tlsCertificateKeyFilePassword=k%2Fpw1&"
      "authMechanismProperties=AWS_SESSION_TOKEN:tok3n,SERVICE_NAME:svc&appname=app");
  auto has = [&](const std::string& x) { return std::find(s.begin(), s.end(), x) != s.end(); };
  EXPECT_TRUE(has("S3cr3tPW%3Ax"));
  EXPECT_TRUE(has("S3cr3tPW:x"));
  EXPECT_TRUE(has("k%2Fpw1"));
  EXPECT_TRUE(has("k/pw1"));
  EXPECT_TRUE(has("tok3n"));
  EXPECT_FALSE(has("app"));
  EXPECT_FALSE(has("u"));
}

TEST(uri_redaction_test, text_loses_embedded_uris_and_known_secrets) {
  const std::vector<std::string> secrets = {"S3cr3tPW:x", "ab"};
  EXPECT_EQ(redact_text("cannot reach mongodb://u:p@h:1/db?x=1, giving up", secrets),
            "cannot reach mongodb://u:****@h:1/db?x=****, giving up");
  EXPECT_EQ(redact_text("auth failed for S3cr3tPW:x (about)", secrets),
            "auth failed for **** (about)");  // too short a secret is not searched for
  EXPECT_EQ(redact_text("'MONGODB+SRV://u:S3cr3tPW@c/'", {}), "'MONGODB+SRV://u:****@c/'");
  EXPECT_EQ(redact_text("no uri here: mongodb is fine", {}), "no uri here: mongodb is fine");
  EXPECT_EQ(redact_text("(mongodb://[::1]:1/?tlsCertificateKeyFilePassword=S3cr3tPW)", {}),
            "(mongodb://[::1]:1/?tlsCertificateKeyFilePassword=****");
}

TEST(uri_redaction_test, uri_messages_lose_every_quoted_value_but_option_names) {
  // What libmongoc 1.23 says about an unescaped ':' in the password.
  EXPECT_EQ(
      redact_uri_message("Invalid URI Schema, expecting 'mongodb://' or 'mongodb+srv://'", {}),
      "Invalid URI Schema, expecting 'mongodb://' or 'mongodb+srv://'");
  EXPECT_EQ(redact_uri_message("Password \"S3cr3tPW:x\" must not have unescaped chars. "
                               "Percent-encode username and password according to RFC 3986.",
                               {}),
            "Password \"****\" must not have unescaped chars. "
            "Percent-encode username and password according to RFC 3986.");
  EXPECT_EQ(redact_uri_message("Unsupported value for \"authMechanismProperties\": \"S3cr\"", {}),
            "Unsupported value for \"authMechanismProperties\": \"****\"");
  EXPECT_EQ(redact_uri_message("Unterminated \"S3cr3tPW", {}), "Unterminated \"****");
  EXPECT_EQ(redact_uri_message("URI option \"S3cr3tPW\" contains no \"=\" sign", {}),
            "URI option \"****\" contains no \"=\" sign");
}

TEST(uri_redaction_test, uri_messages_may_quote_the_option_names_the_uri_shows) {
  const std::string uri =
      "mongodb://h/?replicaSet=rs&fooBar=1&tlsCertificateKeyFilePassword=S3c&r3t";
  const auto names = uri_shown_option_names(uri);
  EXPECT_EQ(names,
            (std::vector<std::string>{"replicaset", "foobar", "tlscertificatekeyfilepassword"}));
  EXPECT_EQ(redact_uri_message("Unsupported URI option \"foobar\"", uri_secrets(uri), names),
            "Unsupported URI option \"foobar\"");
  // "r3t", the rest of the password after an unescaped '&', reads as an option name.
  EXPECT_EQ(redact_uri_message("Unsupported URI option \"r3t\"", uri_secrets(uri), names),
            "Unsupported URI option \"****\"");
}

TEST(uri_redaction_test, the_registry_redacts_what_was_remembered) {
  remember_uri_secrets("mongodb://u:Regi5tered%3Apw@h/");
  EXPECT_EQ(redact_known_secrets("x Regi5tered:pw y Regi5tered%3Apw"), "x **** y ****");
  EXPECT_EQ(redact_known_uri_message("Password \"Regi5tered:pw\" bad"), "Password \"****\" bad");
}

}  // namespace
}  // namespace denormd::mongo
