// SCRAM against published vectors: RFC 7677 (SHA-256), RFC 5802 (SHA-1) and the MongoDB
// authentication specification's SCRAM-SHA-1 example (the password is MongoDB's digest); the
// expected strings are the documents', not computed here. Then the conversation's failures.

#include "scram.h"

#include <gtest/gtest.h>

#include "error_codes.h"

namespace mongo_emulator {
namespace {

scram_conversation::credentials_lookup only(std::string user, scram_credentials c) {
  return [user, c](std::string_view name) -> std::optional<scram_credentials> {
    if (name != user) return std::nullopt;
    return c;
  };
}

scram_credentials credentials(scram_mechanism m, std::string_view material,
                              std::string_view salt_b64, int iterations) {
  return make_scram_credentials(m, material, iterations, *base64_decode(salt_b64));
}

TEST(scram, rfc7677_sha256_vector) {
  const auto c = credentials(scram_mechanism::sha256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096);
  EXPECT_EQ(c.salt, "W22ZaJ0SNY7soEsUEjb6gQ==");
  EXPECT_EQ(c.iteration_count, 4096);
  scram_conversation conv(scram_mechanism::sha256, true, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  auto first = conv.step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", only("user", c));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->payload,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
            "i=4096");
  EXPECT_FALSE(first->done);
  auto last = conv.step(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      only("user", c));
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_EQ(last->payload, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  EXPECT_TRUE(last->done);
  EXPECT_TRUE(conv.succeeded());
  EXPECT_EQ(conv.user(), "user");
}

TEST(scram, rfc5802_sha1_vector) {
  const auto c = credentials(scram_mechanism::sha1, "pencil", "QSXCR+Q6sek8bf92", 4096);
  scram_conversation conv(scram_mechanism::sha1, true, "3rfcNHYJY1ZVvWVs7j");
  auto first = conv.step("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL", only("user", c));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->payload,
            "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096");
  auto last = conv.step(
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
      only("user", c));
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_EQ(last->payload, "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=");
}

// The MongoDB authentication specification's SCRAM-SHA-1 conversation: user "user", password
// "pencil", whose digest MongoDB salts. It also runs without skipEmptyExchange: three steps.
TEST(scram, mongodb_sha1_uses_the_password_digest) {
  auto material = scram_password(scram_mechanism::sha1, "user", "pencil");
  ASSERT_TRUE(material);
  EXPECT_EQ(*material, "1c33006ec1ffd90f9cadcbcc0e118200");
  const auto c = credentials(scram_mechanism::sha1, *material, "rQ9ZY3MntBeuP3E1TDVC4w==", 10000);
  scram_conversation conv(scram_mechanism::sha1, false, "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE");
  ASSERT_TRUE(conv.step("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL", only("user", c)));
  auto second = conv.step(
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
      "p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
      only("user", c));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->payload, "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=");
  EXPECT_FALSE(second->done);
  EXPECT_FALSE(conv.succeeded());
  auto third = conv.step("", only("user", c));
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->done);
  EXPECT_EQ(third->payload, "");
  EXPECT_TRUE(conv.succeeded());
  EXPECT_FALSE(conv.step("", only("user", c)));  // no fourth step
}

TEST(scram, a_wrong_proof_fails) {
  const auto c = credentials(scram_mechanism::sha256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096);
  scram_conversation conv(scram_mechanism::sha256, true, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  ASSERT_TRUE(conv.step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", only("user", c)));
  auto last = conv.step(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=AHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      only("user", c));
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().code, codes::authentication_failed);
  EXPECT_FALSE(conv.succeeded());
}

TEST(scram, malformed_or_unknown_first_messages_fail) {
  const auto c = credentials(scram_mechanism::sha256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096);
  for (const char* input :
       {"n,,n=nobody,r=rOprNGfwEbeRWgbNEkqO", "p=tls-unique,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        "x,,n=user,r=rOprNGfwEbeRWgbNEkqO", "n,,n=user", "n,,n=user,r=abc",
        "n,a=other,n=user,r=rOprNGfwEbeRWgbNEkqO", "n,,m=ext,n=user,r=rOprNGfwEbeRWgbNEkqO"}) {
    scram_conversation conv(scram_mechanism::sha256, true);
    EXPECT_FALSE(conv.step(input, only("user", c))) << input;
  }
  // RFC 5802 escapes ',' and '=' in names.
  scram_conversation conv(scram_mechanism::sha256, true);
  ASSERT_TRUE(conv.step("n,,n=a=2Cb=3Dc,r=rOprNGfwEbeRWgbNEkqO", only("a,b=c", c)));
  EXPECT_EQ(conv.user(), "a,b=c");
}

TEST(scram, a_nonce_other_than_the_servers_fails) {
  const auto c = credentials(scram_mechanism::sha256, "pencil", "W22ZaJ0SNY7soEsUEjb6gQ==", 4096);
  scram_conversation conv(scram_mechanism::sha256, true);  // a random server nonce
  auto first = conv.step("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", only("user", c));
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->payload.starts_with("r=rOprNGfwEbeRWgbNEkqO"));
  EXPECT_GT(first->payload.find(",s="), std::string("r=rOprNGfwEbeRWgbNEkqO").size());
  EXPECT_FALSE(
      conv.step("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
                only("user", c)));
}

TEST(scram, random_salts_have_mongodbs_lengths) {
  const auto a = make_scram_credentials(scram_mechanism::sha1, "x", sha1_iterations);
  const auto b = make_scram_credentials(scram_mechanism::sha256, "x", sha256_iterations);
  EXPECT_EQ(base64_decode(a.salt)->size(), 16U);
  EXPECT_EQ(base64_decode(b.salt)->size(), 28U);
  EXPECT_EQ(base64_decode(a.stored_key)->size(), 20U);
  EXPECT_EQ(base64_decode(b.server_key)->size(), 32U);
  EXPECT_NE(make_scram_credentials(scram_mechanism::sha1, "x", sha1_iterations).salt, a.salt);
}

TEST(scram, base64_round_trips_and_rejects_garbage) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  for (const char* text : {"", "f", "fo", "foo", "foob", "fooba", "foobar"})
    EXPECT_EQ(base64_decode(base64_encode(text)), std::optional<std::string>(text)) << text;
  for (const char* bad : {"Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg=="})
    EXPECT_FALSE(base64_decode(bad)) << bad;
}

TEST(scram, sasl_prep_accepts_ascii_only) {
  EXPECT_EQ(*sasl_prep("s3cr@t pass"), "s3cr@t pass");
  auto control = sasl_prep("a\tb");
  ASSERT_FALSE(control);
  EXPECT_EQ(control.error().code, codes::bad_value);
  auto unicode = sasl_prep("p\xc3\xa4ss");
  ASSERT_FALSE(unicode);
  EXPECT_EQ(unicode.error().code, codes::not_implemented);
  // SCRAM-SHA-1 hashes the digest, whatever the characters.
  EXPECT_TRUE(scram_password(scram_mechanism::sha1, "u", "p\xc3\xa4ss"));
}

}  // namespace
}  // namespace mongo_emulator
