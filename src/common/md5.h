#pragma once
// MD5 (RFC 1321), self-contained: MongoDB's hashed index keys are the first 8 bytes of an MD5
// digest (bson/hashed_key.h), and the libraries that must compute them link no crypto library.
// Not for security. One md5 object digests one message: feed update() any number of times,
// then call finish() once. Thread-compatible (no shared state).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace denormd {

class md5 {
 public:
  using digest = std::array<std::uint8_t, 16>;

  md5() = default;

  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Pads and returns the digest; the object must not be used afterwards.
  digest finish();

  static digest of(std::string_view bytes);
  // Lower-case hexadecimal, as RFC 1321's test suite prints digests.
  static std::string hex(const digest& d);

 private:
  void transform(const std::uint8_t* block);

  std::array<std::uint32_t, 4> state_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  std::array<std::uint8_t, 64> buffer_{};
  std::uint64_t length_ = 0;  // bytes fed so far
};

}  // namespace denormd
