#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstring>
#include <memory>

namespace denormd::http {

namespace {

constexpr std::string_view bcrypt_alphabet =
    "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// bcrypt of `password` with the salt and cost of `hash`; "" when libcrypt refuses the hash.
std::string bcrypt(const std::string& password, const std::string& hash) {
  // crypt_data is some 32 KB: on the heap, not on a thread's stack.
  auto data = std::make_unique<crypt_data>();
  const char* out =
      crypt_rn(password.c_str(), hash.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
  if (out == nullptr || out[0] == '*') return "";
  return out;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with its padding; nullopt when malformed.
std::optional<std::string> base64_decoded(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=')
    ++pad;
  std::string out;
  unsigned bits = 0;
  int held = 0;
  for (std::size_t i = 0; i < in.size() - pad; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<unsigned>(v);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out += static_cast<char>((bits >> held) & 0xFF);
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::string basic_auth::hash_problem(std::string_view hash) {
  const std::string_view expected_form =
      "is not a bcrypt hash ($2a$, $2b$ or $2y$, a cost from 04 to 31, 60 characters)";
  if (hash.size() != 60 || hash.substr(0, 2) != "$2" || hash[3] != '$' || hash[6] != '$')
    return std::string(expected_form);
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return std::string(expected_form);
  if (hash[4] < '0' || hash[4] > '3' || hash[5] < '0' || hash[5] > '9')
    return std::string(expected_form);
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return std::string(expected_form);
  if (hash.substr(7).find_first_not_of(bcrypt_alphabet) != std::string_view::npos)
    return std::string(expected_form);
  if (bcrypt("", std::string(hash)).empty()) return "is a bcrypt hash libcrypt cannot verify";
  return "";
}

std::optional<credentials> basic_auth::parse_header(std::string_view value) {
  if (value.size() < 6 || !iequals(value.substr(0, 6), "basic ")) return std::nullopt;
  value.remove_prefix(6);
  while (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ')
    value.remove_suffix(1);
  const auto decoded = base64_decoded(value);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

std::string basic_auth::key_of(const credentials& c, std::string_view hash) {
  std::string material = c.user;
  material += '\0';
  material += hash;
  material += '\0';
  material += c.password;
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned length = 0;
  EVP_Digest(material.data(), material.size(), digest.data(), &length, EVP_sha256(), nullptr);
  OPENSSL_cleanse(material.data(), material.size());
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

bool basic_auth::remembered(const users& list, const credentials& c) const {
  const auto it = list.find(c.user);
  if (it == list.end()) return false;
  const std::string key = key_of(c, it->second);
  std::lock_guard lock(mutex_);
  return verified_.contains(key);
}

bool basic_auth::verify(const users& list, const credentials& c) {
  if (list.empty()) return false;
  const auto it = list.find(c.user);
  const bool known = it != list.end();
  // An unknown name is checked against a known one's hash: the same cost, and a miss.
  const std::string& hash = known ? it->second : list.begin()->second;
  const std::string computed = bcrypt(c.password, hash);
  const bool match = computed.size() == hash.size() &&
                     CRYPTO_memcmp(computed.data(), hash.data(), hash.size()) == 0;
  if (!known || !match) return false;
  std::string key = key_of(c, hash);
  std::lock_guard lock(mutex_);
  if (verified_.insert(key).second) {
    order_.push_back(std::move(key));
    if (order_.size() > capacity_) {
      verified_.erase(order_.front());
      order_.pop_front();
    }
  }
  return true;
}

}  // namespace denormd::http
