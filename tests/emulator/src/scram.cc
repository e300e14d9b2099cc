#include "scram.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "error_codes.h"

namespace mongo_emulator {

namespace {

constexpr std::string_view base64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const EVP_MD* md_of(scram_mechanism m) {
  return m == scram_mechanism::sha1 ? EVP_sha1() : EVP_sha256();
}

std::string digest(const EVP_MD* md, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &n, md, nullptr) != 1)
    throw std::runtime_error("EVP_Digest failed");
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

std::string hmac(scram_mechanism m, std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  std::size_t n = 0;
  const char* name = m == scram_mechanism::sha1 ? "SHA1" : "SHA256";
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, name, nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
                out.size(), &n) == nullptr)
    throw std::runtime_error("HMAC failed");
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// RFC 5802's saslname: "=2C" is ',' and "=3D" is '=' (MongoDB's decodeSCRAMUsername).
std::string decode_user_name(std::string_view encoded) {
  std::string out;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded.substr(i, 3) == "=2C") {
      out += ',';
      i += 2;
    } else if (encoded.substr(i, 3) == "=3D") {
      out += '=';
      i += 2;
    } else {
      out += encoded[i];
    }
  }
  return out;
}

// Splits on ',' dropping empty parts, as MongoDB's absl::StrSplit(..., SkipEmpty()).
std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    const auto part = s.substr(0, comma);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

denormd::unexpected<denormd::error> bad(std::string message) {
  return denormd::fail(std::move(message), codes::bad_value);
}

}  // namespace

std::string_view mechanism_name(scram_mechanism m) {
  return m == scram_mechanism::sha1 ? "SCRAM-SHA-1" : "SCRAM-SHA-256";
}

std::optional<scram_mechanism> parse_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-1") return scram_mechanism::sha1;
  if (name == "SCRAM-SHA-256") return scram_mechanism::sha256;
  return std::nullopt;
}

std::string mongodb_password_digest(std::string_view user, std::string_view password) {
  const std::string text = std::string(user) + ":mongo:" + std::string(password);
  return hex(digest(EVP_md5(), text));
}

denormd::expected<std::string> sasl_prep(std::string_view password) {
  for (unsigned char c : password) {
    if (c >= 0x80)
      return denormd::fail(
          "mongo-emulator implements SASLprep for ASCII passwords only (see "
          "tests/emulator/README.md)",
          codes::not_implemented);
    if (c < 0x20 || c == 0x7f) return bad("SASLPrep: prohibited character in password");
  }
  return std::string(password);
}

denormd::expected<std::string> scram_password(scram_mechanism m, std::string_view user,
                                              std::string_view password) {
  if (m == scram_mechanism::sha1) return mongodb_password_digest(user, password);
  return sasl_prep(password);
}

scram_credentials make_scram_credentials(scram_mechanism m, std::string_view password_material,
                                         std::int32_t iterations) {
  return make_scram_credentials(m, password_material, iterations,
                                random_bytes(m == scram_mechanism::sha1 ? 16 : 28));
}

scram_credentials make_scram_credentials(scram_mechanism m, std::string_view password_material,
                                         std::int32_t iterations, std::string_view salt) {
  const EVP_MD* md = md_of(m);
  std::string salted(static_cast<std::size_t>(EVP_MD_get_size(md)), '\0');
  if (PKCS5_PBKDF2_HMAC(password_material.data(), static_cast<int>(password_material.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()),
                        static_cast<int>(salt.size()), iterations, md,
                        static_cast<int>(salted.size()),
                        reinterpret_cast<unsigned char*>(salted.data())) != 1)
    throw std::runtime_error("PBKDF2 failed");
  const std::string client_key = hmac(m, salted, "Client Key");
  return scram_credentials{iterations, base64_encode(salt), base64_encode(digest(md, client_key)),
                           base64_encode(hmac(m, salted, "Server Key"))};
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 |
                       static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0})
      out += base64_alphabet[(v >> shift) & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += base64_alphabet[(v >> 18) & 63];
    out += base64_alphabet[(v >> 12) & 63];
    out += rest == 2 ? base64_alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (text.ends_with("==")) {
    padding = 2;
  } else if (text.ends_with("=")) {
    padding = 1;
  }
  const std::size_t data_end = text.size() - padding;
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    unsigned v = 0;
    for (std::size_t j = i; j < i + 4; ++j) {
      v <<= 6;
      if (j >= data_end) continue;  // a padding position
      const auto pos = base64_alphabet.find(text[j]);
      if (pos == std::string_view::npos) return std::nullopt;
      v |= static_cast<unsigned>(pos);
    }
    const std::size_t bytes = i + 4 == text.size() ? 3 - padding : 3;
    for (std::size_t b = 0; b < bytes; ++b)
      out += static_cast<char>(v >> (16 - 8 * b) & 255);
  }
  return out;
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    throw std::runtime_error("RAND_bytes failed");
  return out;
}

scram_conversation::scram_conversation(scram_mechanism m, bool skip_empty_exchange,
                                       std::optional<std::string> nonce_suffix)
    : mechanism_(m),
      skip_empty_exchange_(skip_empty_exchange),
      nonce_suffix_(std::move(nonce_suffix)) {}

denormd::expected<scram_conversation::step_result> scram_conversation::step(
    std::string_view input, const credentials_lookup& lookup) {
  ++step_;
  const int total = skip_empty_exchange_ ? 2 : 3;
  if (step_ > total)
    return denormd::fail("Invalid SCRAM authentication step: " + std::to_string(step_),
                         codes::authentication_failed);
  if (step_ == 1) return first_step(input, lookup);
  if (step_ == 2) return second_step(input);
  succeeded_ = true;
  return step_result{"", true};
}

// client-first-message: gs2-header ("n," or "y,", an optional "a=authzid", ",") then
// "n=user,r=client-nonce"; the answer is "r=client-nonce|server-nonce,s=salt,i=iterations".
denormd::expected<scram_conversation::step_result> scram_conversation::first_step(
    std::string_view input, const credentials_lookup& lookup) {
  const auto cbind_comma = input.find(',');
  if (cbind_comma == std::string_view::npos)
    return bad("Incorrect number of arguments for first SCRAM client message");
  const auto cbind_flag = input.substr(0, cbind_comma);
  if (cbind_flag.starts_with("p=")) return bad("Server does not support channel binding");
  if (cbind_flag != "y" && cbind_flag != "n")
    return bad("Incorrect SCRAM client message prefix: " + std::string(cbind_flag));
  const auto header_comma = input.find(',', cbind_comma + 1);
  if (header_comma == std::string_view::npos)
    return bad("Incorrect number of arguments for first SCRAM client message");
  auto authz_id = input.substr(cbind_comma + 1, header_comma - cbind_comma - 1);
  if (!authz_id.empty()) {
    if (!authz_id.starts_with("a=")) return bad("Incorrect SCRAM authzid");
    authz_id.remove_prefix(2);
  }
  const auto bare = input.substr(header_comma + 1);
  if (bare.starts_with("m=")) return bad("SCRAM mandatory extensions are not supported");
  const auto fields = split_fields(bare);
  if (fields.size() < 2 || !fields[0].starts_with("n=") || fields[0].size() < 3)
    return bad("Invalid SCRAM user name");
  user_ = decode_user_name(fields[0].substr(2));
  if (!authz_id.empty() && user_ != authz_id) return bad("SCRAM user name does not match authzid");
  if (!fields[1].starts_with("r=") || fields[1].size() < 6)
    return bad("Invalid SCRAM client nonce");
  auto credentials = lookup(user_);
  if (!credentials)
    return denormd::fail("Could not find user \"" + user_ + "\" with " +
                             std::string(mechanism_name(mechanism_)) + " credentials",
                         codes::user_not_found);
  credentials_ = std::move(*credentials);
  nonce_ = std::string(fields[1].substr(2)) +
           (nonce_suffix_ ? *nonce_suffix_ : base64_encode(random_bytes(24)));
  std::string out = "r=" + nonce_ + ",s=" + credentials_.salt +
                    ",i=" + std::to_string(credentials_.iteration_count);
  auth_message_ = std::string(bare) + "," + out;
  return step_result{std::move(out), false};
}

// client-final-message: "c=channel-binding,r=nonce,p=proof"; the answer is
// "v=server-signature" once the proof matches the stored key.
denormd::expected<scram_conversation::step_result> scram_conversation::second_step(
    std::string_view input) {
  const auto last_comma = input.rfind(',');
  if (last_comma == std::string_view::npos)
    return bad("Incorrect number of arguments for second SCRAM client message");
  const auto without_proof = input.substr(0, last_comma);
  auth_message_ += "," + std::string(without_proof);
  const auto proof_field = input.substr(last_comma + 1);
  if (proof_field.size() < 3 || !proof_field.starts_with("p="))
    return bad("Incorrect SCRAM ClientProof");
  const auto fields = split_fields(without_proof);
  if (fields.size() < 2) return bad("Incorrect number of arguments for second SCRAM message");
  if (!fields[0].starts_with("c=") || fields[0].size() < 3)
    return bad("Incorrect SCRAM channel binding");
  if (!fields[1].starts_with("r=") || fields[1].size() < 6 || fields[1].substr(2) != nonce_)
    return bad("Unmatched SCRAM nonce received from client in second step");
  const auto proof = base64_decode(proof_field.substr(2));
  const auto stored_key = base64_decode(credentials_.stored_key);
  const auto server_key = base64_decode(credentials_.server_key);
  if (!proof || !stored_key || !server_key)
    return denormd::fail("SCRAM proof or stored credentials are not base64",
                         codes::authentication_failed);
  const std::string signature = hmac(mechanism_, *stored_key, auth_message_);
  if (proof->size() != signature.size())
    return denormd::fail("SCRAM authentication failed, storedKey mismatch",
                         codes::authentication_failed);
  std::string client_key(signature.size(), '\0');
  for (std::size_t i = 0; i < signature.size(); ++i)
    client_key[i] = (*proof)[i] ^ signature[i];
  if (digest(md_of(mechanism_), client_key) != *stored_key)
    return denormd::fail("SCRAM authentication failed, storedKey mismatch",
                         codes::authentication_failed);
  succeeded_ = skip_empty_exchange_;
  return step_result{"v=" + base64_encode(hmac(mechanism_, *server_key, auth_message_)),
                     skip_empty_exchange_};
}

}  // namespace mongo_emulator
