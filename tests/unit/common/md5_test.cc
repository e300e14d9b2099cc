#include "common/md5.h"

#include <gtest/gtest.h>

#include <string>

namespace denormd {
namespace {

// RFC 1321, appendix A.5 ("MD5 test suite").
TEST(md5_test, rfc_1321_test_suite) {
  EXPECT_EQ(md5::hex(md5::of("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5::hex(md5::of("a")), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(md5::hex(md5::of("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5::hex(md5::of("message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(md5::hex(md5::of("abcdefghijklmnopqrstuvwxyz")), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(md5::hex(md5::of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")),
            "d174ab98d277d9f5a5611c2c9f419d9f");
  EXPECT_EQ(
      md5::hex(md5::of("1234567890123456789012345678901234567890123456789012345678901234567890"
                       "1234567890")),
      "57edf4a22be3c955ac49da2e2107b67a");
}

// Messages whose padding needs a second block (55, 56 and 64 bytes: the length field then no
// longer fits after the 0x80 byte), and a long one.
TEST(md5_test, padding_boundaries_and_a_million_bytes) {
  EXPECT_EQ(md5::hex(md5::of(std::string(55, 'a'))), "ef1772b6dff9a122358552954ad0df65");
  EXPECT_EQ(md5::hex(md5::of(std::string(56, 'a'))), "3b0c8ac703f828b04c6c197006d17218");
  EXPECT_EQ(md5::hex(md5::of(std::string(64, 'a'))), "014842d480b571495a4a0363793f7367");
  EXPECT_EQ(md5::hex(md5::of(std::string(1000000, 'a'))), "7707d6ae4e027c70eea2a935c2296f21");
}

// Feeding a message in pieces, split anywhere, gives the one-shot digest.
TEST(md5_test, incremental_updates_match_one_shot) {
  std::string message;
  for (int i = 0; i < 200; ++i)
    message.push_back(static_cast<char>(i * 7 + 3));
  const md5::digest whole = md5::of(message);
  for (std::size_t a = 0; a <= message.size(); a += 13) {
    for (std::size_t b = a; b <= message.size(); b += 29) {
      md5 h;
      h.update(std::string_view(message).substr(0, a));
      h.update(std::string_view(message).substr(a, b - a));
      h.update(std::string_view(message).substr(b));
      ASSERT_EQ(h.finish(), whole) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace denormd
