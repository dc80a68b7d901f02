// The decode attention's tensor-core scores (kernels.attn_mma_scores, kernels/attn/attn_mma_scores.cuh)
// replayed on the CPU (no GPU here): the kernel's own operand words (attn_mma_words.h, host and
// device) placed in the PTX m16n8k32 .s8 fragments of every lane (lane = 4 g + t; A rows g, g + 8,
// k 4t..4t+3 and +16; B column g, the same k; C rows g, g + 8, columns 2t, 2t + 1), the MMA as the
// matrix product those fragments describe, and each lane's c0 + c1 / c2 + c3. Every (key, head,
// block) sum must equal the dp4a path's (score_key_q8i: the natural words of the key's quants
// against the query's), which is what makes the form's scores the same bits: the f32 combination
// after it is the same expression on the same numbers. Also the softmax's sum: the lane layout's
// tree (two in-lane levels, then xor 16, 8, 4) against attn::warp_sum's over the keys, bit for bit.
// On the GPU: kernel-check fused attn_decode_rope/*_tcs and CudaModels.AttnMmaScoresSameBytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "attn/attn_mma_words.h"
#include "backend_cuda/warp_replay.h"

namespace at = memra::cuda::attn;
namespace wq = memra::cuda::wq;

namespace {

constexpr int kKeys = 32, kHeads = 4, kBlocks = 4, kSlice = 136;

int dp4a_natural(const uint8_t* krow, int b, const uint32_t* q8) {
  int s = 0;
  for (int j = 0; j < 8; ++j) {
    uint32_t kw;
    std::memcpy(&kw, krow + 34 * b + 2 + 4 * j, 4);  // the natural word (unaligned read on the host)
    s = wq::dp4a((int)kw, (int)q8[j], s);
  }
  return s;
}

int8_t byte_of(uint32_t w, int i) { return (int8_t)(w >> (8 * i)); }

}  // namespace

TEST(AttnMmaScoresEmul, BlockSumsEqualTheDp4aPath) {
  std::mt19937 rng(3801);
  std::uniform_int_distribution<int> q(-127, 127), byte(0, 255);
  for (int trial = 0; trial < 20; ++trial) {
    // 32 keys' q8_0 head slices (f16 scale bytes are arbitrary: only the quants enter the sums),
    // staged 136 bytes apart from a 16-byte-aligned base, as the kernel's tile.
    alignas(16) uint8_t kt[kKeys][kSlice];
    for (auto& row : kt)
      for (int i = 0; i < kSlice; ++i) row[i] = (uint8_t)(trial == 0 ? (i % 34 < 2 ? byte(rng) : (int8_t)(i % 34 - 18)) : byte(rng));
    uint32_t qw[kHeads][kBlocks * 8];  // the query's int8 quants, 4 per word (QInt8::q)
    for (auto& h : qw)
      for (auto& w : h) {
        w = 0;
        for (int i = 0; i < 4; ++i) w |= (uint32_t)(uint8_t)q(rng) << (8 * i);
      }
    for (int b = 0; b < kBlocks; ++b)
      for (int mt = 0; mt < 2; ++mt) {
        // Every lane's fragments, then the product they describe.
        int8_t A[16][32], B[32][8];
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const uint8_t* r0 = kt[16 * mt + g];
          const uint8_t* r1 = kt[16 * mt + g + 8];
          const uint32_t a[4] = {at::ms_key_word(r0, b, t), at::ms_key_word(r1, b, t), at::ms_key_word(r0, b, t + 4),
                                 at::ms_key_word(r1, b, t + 4)};
          const at::MsWords f = at::ms_query_fragment(&qw[g >> 1][b * 8], g, b, t);
          for (int i = 0; i < 4; ++i) {
            A[g][4 * t + i] = byte_of(a[0], i);
            A[g + 8][4 * t + i] = byte_of(a[1], i);
            A[g][16 + 4 * t + i] = byte_of(a[2], i);
            A[g + 8][16 + 4 * t + i] = byte_of(a[3], i);
            B[4 * t + i][g] = byte_of(f.b0, i);
            B[16 + 4 * t + i][g] = byte_of(f.b1, i);
          }
        }
        int C[16][8] = {};
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 8; ++c)
            for (int k = 0; k < 32; ++k) C[r][c] += (int)A[r][k] * (int)B[k][c];
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const int c0 = C[g][2 * t], c1 = C[g][2 * t + 1], c2 = C[g + 8][2 * t], c3 = C[g + 8][2 * t + 1];
          const int k0 = 16 * mt + g, k1 = k0 + 8;
          EXPECT_EQ(c0 + c1, dp4a_natural(kt[k0], b, &qw[t][b * 8])) << "trial " << trial << " block " << b << " key " << k0 << " head " << t;
          EXPECT_EQ(c2 + c3, dp4a_natural(kt[k1], b, &qw[t][b * 8])) << "trial " << trial << " block " << b << " key " << k1 << " head " << t;
        }
      }
  }
}

// A word's bytes are the quants the order says (the permutation itself, against the layout).
TEST(AttnMmaScoresEmul, WordOrderCoversEveryQuantOnce) {
  alignas(16) uint8_t row[kSlice];
  for (int i = 0; i < kSlice; ++i) row[i] = (uint8_t)i;  // byte value = offset
  uint32_t q8[8];
  for (int w = 0; w < 8; ++w) q8[w] = (uint32_t)(4 * w) | (uint32_t)(4 * w + 1) << 8 | (uint32_t)(4 * w + 2) << 16 | (uint32_t)(4 * w + 3) << 24;
  for (int b = 0; b < kBlocks; ++b) {
    std::vector<int> seen(32, 0);
    for (int w = 0; w < 8; ++w) {
      const uint32_t kw = at::ms_key_word(row, b, w), qv = at::ms_query_word(q8, b, w);
      for (int i = 0; i < 4; ++i) {
        const int kq = (int)((kw >> (8 * i)) & 0xFF) - (34 * b + 2);  // the key byte's quant index
        const int qq = (int)((qv >> (8 * i)) & 0xFF);                 // the query byte's quant index
        ASSERT_GE(kq, 0) << "block " << b << " word " << w << " byte " << i << ": the scale's bytes";
        ASSERT_LT(kq, 32) << "block " << b << " word " << w << " byte " << i << ": the next block's bytes";
        EXPECT_EQ(kq, qq) << "block " << b << " word " << w << " byte " << i;
        ++seen[(size_t)kq];
      }
    }
    for (int i = 0; i < 32; ++i) EXPECT_EQ(seen[(size_t)i], 1) << "block " << b << " quant " << i;
  }
}

// The softmax's sum in the lane layout (lane (g, t): keys g, g + 8, g + 16, g + 24 of head t) is
// attn::warp_sum's tree over the 32 keys (lane = key), bit for bit, on values whose sums round.
TEST(AttnMmaScoresEmul, SumTreeIsTheWarpSumTree) {
  std::mt19937 rng(3802);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> p(kKeys);
    for (auto& v : p) v = u(rng) * (trial % 3 == 0 ? 1e-3f : 1.0f) + (trial % 5 == 0 ? 1e4f : 0.0f);
    const float ref = memra::test::shuffle_sum(p);
    std::vector<float> lanes(32);
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2;
      lanes[(size_t)lane] = (p[(size_t)g] + p[(size_t)g + 16]) + (p[(size_t)g + 8] + p[(size_t)g + 24]);
    }
    for (int o = 16; o >= 4; o >>= 1) {
      std::vector<float> next(32);
      for (int l = 0; l < 32; ++l) next[(size_t)l] = lanes[(size_t)l] + lanes[(size_t)(l ^ o)];
      lanes = next;
    }
    for (int lane = 0; lane < 32; ++lane) {
      uint32_t a, b;
      std::memcpy(&a, &lanes[(size_t)lane], 4);
      std::memcpy(&b, &ref, 4);
      EXPECT_EQ(a, b) << "trial " << trial << " lane " << lane;
    }
  }
}
