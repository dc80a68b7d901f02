// The split-plane int8 decode attention probe's word-level pieces (kernels/attn/attn_i8_words.h),
// replayed on the host: the int8 -> f16 pair words, and one 16-key tile's fragments as the kernel
// takes them (every lane's ldmatrix rows, the PTX fragment roles of ldmatrix, ldmatrix.trans,
// mma m16n8k32 .s8 and m16n8k16 .f16) against the plain sums they must give. The roles used here:
// ldmatrix gives lane 4g + t row g, 16-bit columns 2t (low half) and 2t + 1 of each 8 x 8 matrix,
// .trans the same of the transposed matrix; m16n8k32 .s8: A rows g, g + 8, k 4t..4t+3 (+16),
// B column g, the same k; m16n8k16 .f16: A rows g, g + 8, k 2t, 2t + 1 (+8), B column g, the
// same k; C rows g, g + 8, columns 2t, 2t + 1.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "attn/attn_i8_words.h"
#include "core/half.h"

namespace at = memra::cuda::attn;

namespace {

float half_lo(uint32_t w) { return memra::fp16_to_f32((uint16_t)(w & 0xffffu)); }
float half_hi(uint32_t w) { return memra::fp16_to_f32((uint16_t)(w >> 16)); }
int8_t byte_of(uint32_t w, int i) { return (int8_t)((w >> (8 * i)) & 0xffu); }

// ldmatrix (x4, b16) over a 16-row tile of 128-byte rows: matrix i's row r is the 16 bytes lane
// 8i + r points at (rows, chunks from the kernel's address helpers); trans as PTX says.
void ldsm(const int8_t (&tile)[16][128], int (*row_of)(int), int (*chunk_of)(int, int), int arg, bool trans,
          uint32_t (&out)[32][4]) {
  for (int m = 0; m < 4; ++m) {
    uint16_t mat[8][8];  // [row][16-bit column]
    for (int r = 0; r < 8; ++r) {
      const int lane = 8 * m + r;
      std::memcpy(mat[r], &tile[row_of(lane)][16 * chunk_of(lane, arg)], 16);
    }
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane >> 2, t = lane & 3;
      const uint16_t lo = trans ? mat[2 * t][g] : mat[g][2 * t], hi = trans ? mat[2 * t + 1][g] : mat[g][2 * t + 1];
      out[lane][m] = (uint32_t)lo | (uint32_t)hi << 16;
    }
  }
}

}  // namespace

// Every byte pair through the two words: 1152 + q in each half, so subtracting 1152 is exact.
TEST(AttnI8Words, PairWordsGiveEveryQuantExactly) {
  std::mt19937 rng(20265804);
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t v = 0; v < 65536; ++v) {
      const uint32_t other = rng();
      // pass 0: bytes 0 and 2 exhaustive (element e of both keys), pass 1: bytes 1 and 3.
      const uint32_t r = pass == 0 ? (v & 0xffu) | ((v >> 8) << 16) | (other & 0xff00ff00u)
                                   : ((v & 0xffu) << 8) | ((v >> 8) << 24) | (other & 0x00ff00ffu);
      const at::I8PairWords w = at::i8_pair_words(r);
      const float bias = memra::fp16_to_f32(at::kI8PairBias);
      ASSERT_EQ(bias, 1152.0f);
      ASSERT_EQ(half_lo(w.lo) - bias, (float)byte_of(r, 0)) << std::hex << r;
      ASSERT_EQ(half_hi(w.lo) - bias, (float)byte_of(r, 2)) << std::hex << r;
      ASSERT_EQ(half_lo(w.hi) - bias, (float)byte_of(r, 1)) << std::hex << r;
      ASSERT_EQ(half_hi(w.hi) - bias, (float)byte_of(r, 3)) << std::hex << r;
    }
}

TEST(AttnI8Words, ScalePairsTakeEachKeysBlockScale) {
  // Key a's scales 0..3 = 0x1000 + b, key b's = 0x2000 + b.
  const uint32_t ax = 0x10011000u, ay = 0x10031002u, bx = 0x20012000u, by = 0x20032002u;
  for (int b = 0; b < 4; ++b) {
    const uint32_t w = at::i8_scale_pair(ax, ay, bx, by, b);
    EXPECT_EQ(w & 0xffffu, 0x1000u + (uint32_t)b) << b;
    EXPECT_EQ(w >> 16, 0x2000u + (uint32_t)b) << b;
  }
}

// One tile's S = Q K^T per block (int8 MMAs with the kernel's B rows) and O^T = V^T P^T (f16 MMAs
// with the kernel's A rows and the pair words), against the plain sums, element by element.
TEST(AttnI8Words, TileFragmentsGiveThePlainSums) {
  std::mt19937 rng(20265805);
  std::uniform_int_distribution<int> q(-128, 127), pv(-3, 3);
  for (int trial = 0; trial < 8; ++trial) {
    int8_t kt[16][128], vt[16][128], qh[8][128];
    for (auto& row : kt)
      for (auto& x : row) x = (int8_t)q(rng);
    for (auto& row : vt)
      for (auto& x : row) x = (int8_t)q(rng);
    for (auto& row : qh)
      for (auto& x : row) x = (int8_t)q(rng);
    // Scores: per block bb, A = query rows (heads g; rows g + 8 zero), B from the K ldmatrix.
    for (int bb = 0; bb < 4; ++bb) {
      uint32_t kb[32][4];
      ldsm(kt, at::i8_k_ldsm_row, at::i8_k_ldsm_chunk, bb, false, kb);
      for (int nt = 0; nt < 2; ++nt) {
        int8_t B[32][8];
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          for (int i = 0; i < 4; ++i) {
            B[4 * t + i][g] = byte_of(kb[lane][2 * nt], i);
            B[16 + 4 * t + i][g] = byte_of(kb[lane][2 * nt + 1], i);
          }
        }
        for (int h = 0; h < 8; ++h)
          for (int n = 0; n < 8; ++n) {
            int c = 0, want = 0;
            for (int k = 0; k < 32; ++k) {
              // the kernel's A: head h's quants 32bb + 4t.. (k 4t..) and 32bb + 16 + 4t.. (k 16 + 4t..)
              c += (int)qh[h][32 * bb + k] * (int)B[k][n];
              want += (int)qh[h][32 * bb + k] * (int)kt[8 * nt + n][32 * bb + k];
            }
            ASSERT_EQ(c, want) << "trial " << trial << " block " << bb << " n-tile " << nt << " head " << h << " key " << n;
          }
      }
    }
    // P x V: B = P^T (keys x heads, small integers: every product and sum exact in f32).
    float P[16][8];
    for (auto& row : P)
      for (auto& x : row) x = (float)pv(rng);
    for (int j = 0; j < 8; j += 2) {
      uint32_t vr[32][4];
      ldsm(vt, at::i8_v_ldsm_row, at::i8_v_ldsm_chunk, j, true, vr);
      for (int h2 = 0; h2 < 2; ++h2) {
        float A[16][16];
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          const float bias = memra::fp16_to_f32(at::kI8PairBias);
          const at::I8PairWords w0 = at::i8_pair_words(vr[lane][2 * h2]), w1 = at::i8_pair_words(vr[lane][2 * h2 + 1]);
          A[g][2 * t] = half_lo(w0.lo) - bias;  // a0: row g, keys 2t, 2t + 1
          A[g][2 * t + 1] = half_hi(w0.lo) - bias;
          A[g + 8][2 * t] = half_lo(w0.hi) - bias;  // a1: row g + 8
          A[g + 8][2 * t + 1] = half_hi(w0.hi) - bias;
          A[g][2 * t + 8] = half_lo(w1.lo) - bias;  // a2 / a3: keys 8 + 2t, 9 + 2t
          A[g][2 * t + 9] = half_hi(w1.lo) - bias;
          A[g + 8][2 * t + 8] = half_lo(w1.hi) - bias;
          A[g + 8][2 * t + 9] = half_hi(w1.hi) - bias;
        }
        const int mt = j + h2;
        for (int r = 0; r < 16; ++r)
          for (int n = 0; n < 8; ++n) {
            float c = 0.0f, want = 0.0f;
            const int e = at::i8_v_row_element(mt, r);
            for (int k = 0; k < 16; ++k) {
              c += A[r][k] * P[k][n];
              want += (float)vt[k][e] * P[k][n];
            }
            ASSERT_EQ(c, want) << "trial " << trial << " m-tile " << mt << " row " << r << " head " << n;
          }
      }
    }
  }
}
