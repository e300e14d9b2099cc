#pragma once
// Test material for the web config tests: keys and certificates made with OpenSSL in-process
// (a CA, a server certificate for localhost and 127.0.0.1, client certificates), bcrypt
// hashes made with libcrypt at the lowest cost, and a scratch folder.

#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace denormd::http::testing {

// A folder of its own, removed with the object.
class scratch_dir {
 public:
  scratch_dir() {
    std::string templ = (std::filesystem::temp_directory_path() / "denormd-web-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

// A key and its certificate, signed by `issuer` (itself when null).
struct identity {
  std::shared_ptr<EVP_PKEY> key;
  std::shared_ptr<X509> cert;
};

inline void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("bad extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// `alt_names`: a subjectAltName value ("DNS:localhost,IP:127.0.0.1"), or "" for none.
inline identity make_identity(const std::string& common_name, const identity* issuer, bool ca,
                              const std::string& alt_names = "") {
  static long serial = 1;
  identity out;
  out.key.reset(EVP_EC_gen("P-256"), EVP_PKEY_free);
  out.cert.reset(X509_new(), X509_free);
  X509* x = out.cert.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, out.key.get());
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert.get() : x;
  X509_set_issuer_name(x, X509_get_subject_name(issuer_cert));
  add_extension(x, issuer_cert, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (!alt_names.empty()) add_extension(x, issuer_cert, NID_subject_alt_name, alt_names.c_str());
  X509_sign(x, issuer != nullptr ? issuer->key.get() : out.key.get(), EVP_sha256());
  return out;
}

inline void write_pem(const identity& id, const std::string& cert_file,
                      const std::string& key_file) {
  std::FILE* c = std::fopen(cert_file.c_str(), "wb");
  PEM_write_X509(c, id.cert.get());
  std::fclose(c);
  std::FILE* k = std::fopen(key_file.c_str(), "wb");
  PEM_write_PrivateKey(k, id.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(k);
}

// A bcrypt hash of `password` ($2b$, cost 4: fast), with a fresh salt.
inline std::string bcrypt_hash(const std::string& password, int cost = 4) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt) ==
      nullptr)
    throw std::runtime_error("crypt_gensalt_rn failed");
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_rn(password.c_str(), salt, data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') throw std::runtime_error("crypt_rn failed");
  return out;
}

}  // namespace denormd::http::testing
