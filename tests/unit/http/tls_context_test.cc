#include "http/tls_context.h"

#include <gtest/gtest.h>

#include <openssl/ssl.h>

#include <string>

#include "test_certificates.h"

namespace denormd::http {
namespace {

class tls_context_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = testing::make_identity("test CA", nullptr, true);
    server_ = testing::make_identity("localhost", &ca_, false, "DNS:localhost,IP:127.0.0.1");
    testing::write_pem(ca_, dir_.file("ca.pem"), dir_.file("ca-key.pem"));
    testing::write_pem(server_, dir_.file("cert.pem"), dir_.file("key.pem"));
    settings_.cert_file = dir_.file("cert.pem");
    settings_.key_file = dir_.file("key.pem");
  }

  testing::scratch_dir dir_;
  testing::identity ca_;
  testing::identity server_;
  tls_settings settings_;
};

TEST_F(tls_context_test, loads_the_certificate_and_key_with_the_versions_asked_for) {
  settings_.min_version = tls_version::tls13;
  auto ctx = make_tls_context(settings_, "web.yml");
  ASSERT_TRUE(ctx) << ctx.error().message;
  SSL_CTX* native = (*ctx)->native_handle();
  EXPECT_EQ(SSL_CTX_get_min_proto_version(native), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_max_proto_version(native), TLS1_3_VERSION);
  EXPECT_EQ(SSL_CTX_get_verify_mode(native), SSL_VERIFY_NONE);
}

TEST_F(tls_context_test, client_certificates_are_required_and_verified_against_the_ca) {
  settings_.require_client_cert = true;
  settings_.client_ca_file = dir_.file("ca.pem");
  auto ctx = make_tls_context(settings_, "web.yml");
  ASSERT_TRUE(ctx) << ctx.error().message;
  EXPECT_EQ(SSL_CTX_get_verify_mode((*ctx)->native_handle()),
            SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
}

TEST_F(tls_context_test, a_file_that_cannot_be_loaded_is_named_with_its_key_and_reason) {
  tls_settings missing = settings_;
  missing.cert_file = dir_.file("nope.pem");
  auto a = make_tls_context(missing, "web.yml");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message, "web.yml: tls_server_config.cert_file: cannot load \"" +
                                   dir_.file("nope.pem") + "\": No such file or directory");

  tls_settings garbage = settings_;
  garbage.key_file = dir_.write("garbage.pem", "not a key\n");
  auto b = make_tls_context(garbage, "web.yml");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message.rfind("web.yml: tls_server_config.key_file: cannot load \"" +
                                        dir_.file("garbage.pem") + "\": ",
                                    0),
            0u)
      << b.error().message;

  tls_settings no_ca = settings_;
  no_ca.require_client_cert = true;
  no_ca.client_ca_file = dir_.file("no-ca.pem");
  auto c = make_tls_context(no_ca, "web.yml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("tls_server_config.client_ca_file: cannot load"),
            std::string::npos);
}

TEST_F(tls_context_test, a_key_of_another_certificate_is_refused) {
  tls_settings mismatched = settings_;
  mismatched.key_file = dir_.file("ca-key.pem");
  auto ctx = make_tls_context(mismatched, "web.yml");
  ASSERT_FALSE(ctx);
  EXPECT_EQ(ctx.error().message, "web.yml: tls_server_config.key_file: \"" +
                                     dir_.file("ca-key.pem") + "\" is not the key of cert_file \"" +
                                     dir_.file("cert.pem") + "\"");
}

}  // namespace
}  // namespace denormd::http
