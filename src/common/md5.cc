#include "common/md5.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace denormd {

namespace {

// RFC 1321 §3.4: T[i] = floor(2^32 * |sin(i + 1)|), and the per-step left rotations.
constexpr std::array<std::uint32_t, 64> sines{
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

constexpr std::array<int, 16> rotations{7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21};

std::uint32_t load_le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}

void store_le32(std::uint32_t v, std::uint8_t* p) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

void md5::transform(const std::uint8_t* block) {
  std::array<std::uint32_t, 16> x{};
  for (std::size_t i = 0; i < 16; ++i)
    x[i] = load_le32(block + 4 * i);
  std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  for (unsigned i = 0; i < 64; ++i) {
    const unsigned round = i / 16;
    std::uint32_t f = 0;
    unsigned word = 0;
    switch (round) {
      case 0:
        f = (b & c) | (~b & d);
        word = i;
        break;
      case 1:
        f = (b & d) | (c & ~d);
        word = (5 * i + 1) % 16;
        break;
      case 2:
        f = b ^ c ^ d;
        word = (3 * i + 5) % 16;
        break;
      default:
        f = c ^ (b | ~d);
        word = (7 * i) % 16;
        break;
    }
    const std::uint32_t sum = a + f + sines[i] + x[word];
    a = d;
    d = c;
    c = b;
    b = b + std::rotl(sum, rotations[round * 4 + i % 4]);
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
}

void md5::update(const void* data, std::size_t size) {
  const auto* in = static_cast<const std::uint8_t*>(data);
  std::size_t used = static_cast<std::size_t>(length_ % 64);
  length_ += size;
  if (used != 0) {
    const std::size_t take = std::min(size, 64 - used);
    std::memcpy(buffer_.data() + used, in, take);
    in += take;
    size -= take;
    used += take;
    if (used < 64) return;
    transform(buffer_.data());
  }
  for (; size >= 64; in += 64, size -= 64)
    transform(in);
  if (size != 0) std::memcpy(buffer_.data(), in, size);
}

md5::digest md5::finish() {
  // A 1 bit, zeros up to 56 bytes mod 64, then the message length in bits (little-endian).
  const std::uint64_t bits = length_ * 8;
  static constexpr std::uint8_t padding[64] = {0x80};
  const std::size_t used = static_cast<std::size_t>(length_ % 64);
  update(padding, used < 56 ? 56 - used : 120 - used);
  std::uint8_t tail[8];
  for (int i = 0; i < 8; ++i)
    tail[i] = static_cast<std::uint8_t>(bits >> (8 * i));
  update(tail, sizeof tail);
  digest out{};
  for (std::size_t i = 0; i < 4; ++i)
    store_le32(state_[i], out.data() + 4 * i);
  return out;
}

md5::digest md5::of(std::string_view bytes) {
  md5 h;
  h.update(bytes);
  return h.finish();
}

std::string md5::hex(const digest& d) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (const std::uint8_t byte : d) {
    out.push_back(digits[byte >> 4]);
    out.push_back(digits[byte & 0xF]);
  }
  return out;
}

}  // namespace denormd
