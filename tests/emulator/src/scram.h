#pragma once
// SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB speaks them: the stored
// credentials (salt, StoredKey, ServerKey, iteration count), the password each mechanism hashes
// (SCRAM-SHA-1: MongoDB's digest, hex MD5 of "user:mongo:pwd"; SCRAM-SHA-256: the SASLprep'd
// password), and scram_conversation, the server side of one conversation
// (sasl_scram_server_conversation.cpp): client-first -> server-first, client-final ->
// server-final, and with skipEmptyExchange off a last empty step. Hashing through OpenSSL.
// scram_conversation: one per saslStart, owned by its connection; not thread-safe.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"

namespace mongo_emulator {

enum class scram_mechanism { sha1, sha256 };

std::string_view mechanism_name(scram_mechanism m);  // "SCRAM-SHA-1", "SCRAM-SHA-256"
std::optional<scram_mechanism> parse_mechanism(std::string_view name);

// A user's credentials for one mechanism, base64 strings as MongoDB stores them.
struct scram_credentials {
  std::int32_t iteration_count = 0;
  std::string salt;
  std::string stored_key;
  std::string server_key;
};

// MongoDB's defaults (scramIterationCount, scramSHA256IterationCount).
inline constexpr std::int32_t sha1_iterations = 10000;
inline constexpr std::int32_t sha256_iterations = 15000;

// hex(MD5("user:mongo:pwd")): what SCRAM-SHA-1 salts (drivers send the same digest).
std::string mongodb_password_digest(std::string_view user, std::string_view password);

// SASLprep (RFC 4013) for the passwords this server accepts: printable ASCII is unchanged,
// ASCII control characters are prohibited (2 BadValue), anything else is refused with 238
// NotImplemented (no Unicode normalization here).
denormd::expected<std::string> sasl_prep(std::string_view password);

// The password material a mechanism salts: the digest (SCRAM-SHA-1) or sasl_prep (SHA-256).
denormd::expected<std::string> scram_password(scram_mechanism m, std::string_view user,
                                              std::string_view password);

// Credentials from password material: with a random salt (16 bytes for SHA-1, 28 for SHA-256,
// as MongoDB), or with the salt given (raw bytes).
scram_credentials make_scram_credentials(scram_mechanism m, std::string_view password_material,
                                         std::int32_t iterations);
scram_credentials make_scram_credentials(scram_mechanism m, std::string_view password_material,
                                         std::int32_t iterations, std::string_view salt);

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);
std::string random_bytes(std::size_t n);

class scram_conversation {
 public:
  // The credentials of a user of the conversation's database, or nullopt (no such user, or no
  // credentials for the mechanism).
  using credentials_lookup = std::function<std::optional<scram_credentials>(std::string_view)>;
  // `nonce_suffix` replaces the random server nonce (tests reproduce RFC vectors with it).
  scram_conversation(scram_mechanism m, bool skip_empty_exchange,
                     std::optional<std::string> nonce_suffix = std::nullopt);

  struct step_result {
    std::string payload;
    bool done = false;
  };
  // One step; an error is the reason MongoDB logs (the client only hears "Authentication
  // failed."). After an error the conversation is over.
  denormd::expected<step_result> step(std::string_view input, const credentials_lookup& lookup);

  scram_mechanism mechanism() const { return mechanism_; }
  const std::string& user() const { return user_; }
  bool succeeded() const { return succeeded_; }

 private:
  denormd::expected<step_result> first_step(std::string_view input,
                                            const credentials_lookup& lookup);
  denormd::expected<step_result> second_step(std::string_view input);

  scram_mechanism mechanism_;
  bool skip_empty_exchange_;
  std::optional<std::string> nonce_suffix_;
  int step_ = 0;
  std::string user_;
  std::string nonce_;
  std::string auth_message_;
  scram_credentials credentials_;
  bool succeeded_ = false;
};

}  // namespace mongo_emulator
