// The CUDA weight decoders (kernels/quant/weight_decode.cuh) compiled for the host: every type's
// chunk decode must reproduce lib/quant's dequantize_row bit for bit, on realistic blocks (CPU
// quantizer output) and on random bit patterns; and the chunk x q8_1 dot product used by the
// dp4a matvec must match an f64 dot product of the two CPU dequantizations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "quant/quant.h"
#include "quant/weight_decode.cuh"

using memra::QType;
namespace wq = memra::cuda::wq;

namespace {

// Offsets of the f16 scale fields in each block (format facts), overwritten with sane values in
// the random-bits blocks so that no NaN/Inf scale appears.
std::vector<int> f16_fields(QType t) {
  switch (t) {
    case QType::Q4_1: case QType::Q5_1: case QType::Q4_K: case QType::Q5_K: return {0, 2};
    case QType::Q2_K: return {80, 82};
    case QType::Q3_K: return {108};
    case QType::Q6_K: return {208};
    default: return {0};
  }
}

std::vector<uint8_t> make_blocks(QType t, int64_t n, bool random_bits, std::mt19937_64& rng) {
  const size_t bytes = *memra::qtype_row_bytes(t, n);
  std::vector<uint8_t> out(bytes);
  if (!random_bits) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> f(n);
    for (auto& v : f) v = nd(rng);
    memra::quantize_row(t, f.data(), out.data(), n);
    return out;
  }
  for (auto& b : out) b = (uint8_t)rng();
  const auto& tr = memra::qtype_traits(t);
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  for (size_t b = 0; b < bytes / tr.block_bytes; ++b)
    for (int off : f16_fields(t)) {
      const uint16_t h = memra::f32_to_fp16((rng() & 1 ? -1.f : 1.f) * mag(rng));
      std::memcpy(&out[b * tr.block_bytes + off], &h, 2);
    }
  return out;
}

template <QType T>
void check_type(bool random_bits) {
  using Tr = wq::WTraits<T>;
  ASSERT_EQ((uint32_t)Tr::kBytes, memra::qtype_traits(T).block_bytes);
  ASSERT_EQ((uint32_t)Tr::kElems, memra::qtype_traits(T).block_elems);
  std::mt19937_64 rng(1234 + (uint64_t)T + (random_bits ? 77 : 0));
  const int64_t n = 1024;
  const auto w = make_blocks(T, n, random_bits, rng);
  std::vector<float> ref(n);
  memra::dequantize_row(T, w.data(), ref.data(), n);

  // Activations: q8_1 of N(0,1) values through the CPU quantizer, and their dequantization.
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> xf(n);
  for (auto& v : xf) v = nd(rng);
  std::vector<uint8_t> xq(*memra::qtype_row_bytes(QType::Q8_1, n));
  memra::quantize_row(QType::Q8_1, xf.data(), xq.data(), n);
  std::vector<float> xd(n);
  memra::dequantize_row(QType::Q8_1, xq.data(), xd.data(), n);

  int64_t mismatches = 0;
  for (int64_t c = 0; c < n / 32; ++c) {
    wq::Chunk ch;
    Tr::decode(w.data() + (c / Tr::kSubs) * Tr::kBytes, (int)(c % Tr::kSubs), ch);
    for (int e = 0; e < 32; ++e) {
      const float got = wq::dequantize_value<T>(ch, e);
      if (std::memcmp(&got, &ref[c * 32 + e], 4) != 0 && mismatches++ < 5)
        ADD_FAILURE() << memra::qtype_name(T) << " chunk " << c << " element " << e << ": got " << got
                      << " want " << ref[c * 32 + e];
    }
    double want = 0, mag = 0;
    for (int e = 0; e < 32; ++e) {
      want += (double)ref[c * 32 + e] * xd[c * 32 + e];
      mag += std::fabs((double)ref[c * 32 + e] * xd[c * 32 + e]);
    }
    const float dot = wq::chunk_dot_q8_1<T>(ch, xq.data() + c * 36);
    // A handful of f32 roundings of values bounded by sum|w*x|: 1e-6 of that sum is generous.
    EXPECT_NEAR(dot, want, 1e-6 * mag + 1e-30) << memra::qtype_name(T) << " chunk " << c;
  }
  EXPECT_EQ(mismatches, 0) << memra::qtype_name(T);
}

}  // namespace

#define MEMRA_DECODE_TEST(N)                                      \
  TEST(WeightDecode, N##_Quantized) { check_type<QType::N>(false); } \
  TEST(WeightDecode, N##_RandomBits) { check_type<QType::N>(true); }
MEMRA_CUDA_WTYPES(MEMRA_DECODE_TEST)
#undef MEMRA_DECODE_TEST

TEST(WeightDecode, Iq4LookupCoversEveryIndex) {
  // All 16 codebook entries through the 4-at-a-time byte-permute lookup.
  const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (uint32_t a = 0; a < 16; ++a)
    for (uint32_t b = 0; b < 16; ++b) {
      const uint32_t idx = a | (b << 8) | (((a + 5) & 15) << 16) | (((b + 11) & 15) << 24);
      const uint32_t r = wq::iq4_lookup4(idx);
      EXPECT_EQ((int8_t)(r & 0xFF), kv[a]);
      EXPECT_EQ((int8_t)((r >> 8) & 0xFF), kv[b]);
      EXPECT_EQ((int8_t)((r >> 16) & 0xFF), kv[(a + 5) & 15]);
      EXPECT_EQ((int8_t)((r >> 24) & 0xFF), kv[(b + 11) & 15]);
    }
}

TEST(WeightDecode, Iq4PermuteSumEqualsCodebookSum) {
  // iq4_dot8 (two sign-mode permutes per four indices, dp4a's linearity) against the sum over the
  // format's codebook (written out here), every pattern of the first four indices; and prmt_sx's
  // sign mode itself (a selector nibble with bit 3 replicates the chosen byte's sign).
  const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  EXPECT_EQ(wq::prmt_sx(0x80017FF0u, 0u, 0x8321u), 0xFF80017Fu);
  EXPECT_EQ(wq::prmt_sx(0x807F0102u, 0u, 0xBA98u), 0xFF000000u);
  std::mt19937_64 rng(57);
  for (uint32_t lo = 0; lo < 65536; ++lo) {
    const uint64_t r = rng();
    const uint32_t w = lo | ((uint32_t)r << 16);
    const int x0 = (int)(uint32_t)(r >> 16), x1 = (int)(uint32_t)(r >> 32) ^ (int)lo;
    const int acc = (int)(r % 1000) - 500;
    int64_t want = acc;
    for (int e = 0; e < 8; ++e)
      want += (int64_t)kv[(w >> (4 * e)) & 15u] * (int8_t)((uint32_t)(e < 4 ? x0 : x1) >> (8 * (e & 3)));
    ASSERT_EQ(wq::iq4_dot8(w, x0, x1, acc), want) << "w=" << w;
  }
}
