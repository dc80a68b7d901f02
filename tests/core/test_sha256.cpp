// SHA-256 against FIPS 180-4's examples and the two block functions against each other.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/sha256.h"

namespace memra {
namespace {

// FIPS 180-4 / NIST CSRC example values (SHA256.pdf): "abc", the 448-bit two-block message and a
// million 'a'; the empty string's digest is the standard one.
TEST(Sha256, FipsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Every split of a message into update() calls gives the digest of the whole.
TEST(Sha256, StreamingEqualsOneShot) {
  std::mt19937 rng(7);
  std::string msg(3000, '\0');
  for (char& c : msg) c = (char)(rng() & 0xFF);
  const std::string whole = sha256_hex(msg);
  for (size_t step : {1, 3, 63, 64, 65, 127, 1000}) {
    Sha256 h;
    for (size_t i = 0; i < msg.size(); i += step) h.update(msg.data() + i, std::min(step, msg.size() - i));
    EXPECT_EQ(h.finish_hex(), whole) << "step " << step;
  }
}

// The SHA-extension blocks are the portable blocks' function: random states and data, 1..40 blocks.
TEST(Sha256, ShaExtensionsEqualPortable) {
  if (!sha256_detail::shani_available()) GTEST_SKIP() << "this CPU has no SHA extensions (the portable path is FipsExamples')";
  std::mt19937 rng(20261205);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<uint8_t> data(64 * n);
    for (auto& b : data) b = (uint8_t)rng();
    uint32_t a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = b[i] = (uint32_t)rng();
    sha256_detail::blocks_portable(a, data.data(), n);
    sha256_detail::blocks_shani(b, data.data(), n);
    ASSERT_EQ(std::memcmp(a, b, sizeof a), 0) << "trial " << trial << ", " << n << " blocks";
  }
}

}  // namespace
}  // namespace memra
