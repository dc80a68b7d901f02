#include "core/sha256.h"

#include <cstdio>
#include <cstring>
#include <vector>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/error.h"

namespace memra {
namespace {
constexpr uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

namespace sha256_detail {

void blocks_portable(uint32_t h_[8], const uint8_t* p, size_t n) {
  for (; n; --n, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const uint32_t ch = (e & f) ^ (~e & g);
      const uint32_t t1 = h + S1 + ch + K[i] + w[i];
      const uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = S0 + mj;
      h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The x86 SHA extensions (sha256rnds2 / sha256msg1 / sha256msg2): two rounds per instruction on
// the state split as (A, B, E, F) and (C, D, G, H), lane 3 first; the message schedule four words
// at a time. The same function of the input as blocks_portable (test_core Sha256.*).
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_shani(uint32_t h[8], const uint8_t* p, size_t n) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i abef = _mm_set_epi32((int)h[0], (int)h[1], (int)h[4], (int)h[5]);
  __m128i cdgh = _mm_set_epi32((int)h[2], (int)h[3], (int)h[6], (int)h[7]);
  for (; n; --n, p += 64) {
    const __m128i abef0 = abef, cdgh0 = cdgh;
    __m128i w[4];
    for (int g = 0; g < 16; ++g) {
      __m128i& wg = w[g & 3];
      if (g < 4) {
        wg = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), bswap);
      } else {  // W[t..t+3] from W[t-16..t-1]: w[g & 3] holds W[t-16..t-13] until overwritten here
        const __m128i w1 = w[(g + 1) & 3], w2 = w[(g + 2) & 3], w3 = w[(g + 3) & 3];
        const __m128i x = _mm_add_epi32(_mm_sha256msg1_epu32(wg, w1), _mm_alignr_epi8(w3, w2, 4));
        wg = _mm_sha256msg2_epu32(x, w3);
      }
      __m128i wk = _mm_add_epi32(wg, _mm_loadu_si128(reinterpret_cast<const __m128i*>(K + 4 * g)));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);  // now (A, B, E, F) after two rounds
      wk = _mm_shuffle_epi32(wk, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);  // the old (A, B, E, F) is the new (C, D, G, H)
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
  }
  alignas(16) uint32_t x[4], y[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(x), abef);
  _mm_store_si128(reinterpret_cast<__m128i*>(y), cdgh);
  h[0] = x[3]; h[1] = x[2]; h[4] = x[1]; h[5] = x[0];
  h[2] = y[3]; h[3] = y[2]; h[6] = y[1]; h[7] = y[0];
}

bool shani_available() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & bit_SHA) != 0;
  }();
  return ok;
}
#else
void blocks_shani(uint32_t h[8], const uint8_t* p, size_t n) { blocks_portable(h, p, n); }
bool shani_available() { return false; }
#endif

}  // namespace sha256_detail

void Sha256::blocks(const uint8_t* p, size_t n) {
  if (sha256_detail::shani_available())
    sha256_detail::blocks_shani(h_, p, n);
  else
    sha256_detail::blocks_portable(h_, p, n);
}

void Sha256::update(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (buf_len_) {
    const size_t take = std::min(n, 64 - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take; p += take; n -= take;
    if (buf_len_ == 64) { blocks(buf_, 1); buf_len_ = 0; }
  }
  if (n >= 64) {
    blocks(p, n / 64);
    p += n / 64 * 64;
    n %= 64;
  }
  if (n) { std::memcpy(buf_, p, n); buf_len_ = n; }
}

std::array<uint8_t, 32> Sha256::finish() {
  const uint64_t bits = total_ * 8;
  const uint8_t pad = 0x80;
  update(&pad, 1);
  const uint8_t zero = 0;
  while (buf_len_ != 56) update(&zero, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  update(len, 8);
  std::array<uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = (uint8_t)(h_[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::finish_hex() {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : finish()) { s += hex[b >> 4]; s += hex[b & 15]; }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.finish_hex();
}

std::string sha256_file_hex(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) MEMRA_FAIL("cannot open '{}' for hashing", path);
  Sha256 h;
  std::vector<uint8_t> buf(1 << 22);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  const bool err = std::ferror(f);
  std::fclose(f);
  if (err) MEMRA_FAIL("read error while hashing '{}'", path);
  return h.finish_hex();
}

}  // namespace memra
