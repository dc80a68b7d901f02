#pragma once
// The decode attention's int8 scores and online softmax of one warp's 32-key tile on the int8
// tensor cores (AttnParams::RopeFold::mma_scores; kernels/attn/attn_decode.cu, the staged form of
// a group of 4 query heads). The same bits as score_key_q8i + the interleaved softmax
// (bench/notes/attn-sass-census.md, candidate 1):
// - per 32-element block, mma.sync m16n8k32 (s8 x s8 -> s32) gives exact integer dot products of
//   16 keys (A rows: the staged q8_0 K slices) with 8 columns: each of the 4 heads twice, its query
//   quants masked to one half of the block's k in each (column 2h + half), so that lane (g, t)
//   gets head t's two halves of keys g and g + 8 and adds them (exact), 4 useful values per lane
//   (8 heads' worth of columns for 4 heads would double every lane's f32 work instead);
// - the k order inside a block is free (an integer sum), so on the blocks whose quants start 2
//   bytes past a word boundary the quants are 7 aligned words and one word of the block's two end
//   pairs, and the query words are permuted the same way;
// - each block's sum is scaled and added in f32 exactly as score_key_q8i does, blocks in order;
// - the softmax's max is order-free, and its sum is attn::warp_sum's tree over the 32 keys: lane
//   (g, t) holds keys g, g + 8, g + 16, g + 24 of head t, so the tree's first two levels (key bits
//   4 and 3) are in-lane additions and three shuffles (xor 16, 8, 4 on the lane) key bits 2, 1, 0.
// Lane roles (PTX m16n8k32 .s8): lane = 4 g + t; A rows g and g + 8, k 4t..4t+3 and +16; B column
// g, k 4t..4t+3 and +16; C rows g and g + 8, columns 2t and 2t + 1.
#include <cuda_fp16.h>

#include <cstdint>

#include "attn/attn_common.cuh"
#include "attn/attn_mma_words.h"

namespace memra::cuda::attn {

constexpr int kMsKs = 4 * 34;  // bytes of a key's q8_0 head slice at head_dim 128 (4 blocks)

__device__ __forceinline__ void mma_s8_16x8x32(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The block's B fragments in shared memory: qm[g][b][t] = {b0, b1} of lane (g, t) for block b
// (column g = head g / 2, half g % 2: the half's word, zero in the other), dq[b][h] the heads'
// block scales. MsQuery<0>: the kernels without the form. ms_prepare_query writes them once per
// block, after a block barrier (the query's quantization complete).
template <int G>
struct MsQuery {
  uint2 qm[G ? 8 : 1][G ? 4 : 1][G ? 4 : 1];
  float dq[G ? 4 : 1][G ? 4 : 1];
};
template <class QI>
__device__ __forceinline__ void ms_prepare_query(MsQuery<4>& s, const QI& qi, int tid, int nthreads) {
  __syncthreads();
  for (int i = tid; i < 8 * 4 * 4; i += nthreads) {
    const int g = i / 16, b = (i / 4) % 4, t = i % 4;
    const MsWords f = ms_query_fragment(&qi.q[g >> 1][b * 8], g, b, t);
    s.qm[g][b][t] = make_uint2(f.b0, f.b1);
  }
  for (int i = tid; i < 4 * 4; i += nthreads) s.dq[i / 4][i % 4] = qi.d[i % 4][i / 4];
}

// The tile's raw scores dt[mt][r] of key 16 mt + 8 r + g and head t: the block sums in the order
// and f32 expression of score_key_q8i. kt: the warp's staged tile (32 keys x 136 bytes; rows past
// the tile's keys hold anything: their scores are masked by the caller).
__device__ __forceinline__ void ms_tile_scores(const uint8_t (*kt)[kMsKs], const MsQuery<4>& s, float (&dt)[2][2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  dt[0][0] = dt[0][1] = dt[1][0] = dt[1][1] = 0.0f;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint2 bq = s.qm[g][b][t];
    const float dq = s.dq[b][t];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const uint8_t* r0 = kt[16 * mt + g];
      const uint8_t* r1 = kt[16 * mt + g + 8];
      const uint32_t a[4] = {ms_key_word(r0, b, t), ms_key_word(r1, b, t), ms_key_word(r0, b, t + 4),
                             ms_key_word(r1, b, t + 4)};
      int c[4] = {0, 0, 0, 0};
      mma_s8_16x8x32(c, a, bq.x, bq.y);
      const float dk0 = __half2float(*reinterpret_cast<const __half*>(r0 + 34 * b));
      const float dk1 = __half2float(*reinterpret_cast<const __half*>(r1 + 34 * b));
      dt[mt][0] = __fadd_rn(dt[mt][0], __fmul_rn((float)(c[0] + c[1]), __fmul_rn(dk0, dq)));
      dt[mt][1] = __fadd_rn(dt[mt][1], __fmul_rn((float)(c[2] + c[3]), __fmul_rn(dk1, dq)));
    }
  }
}

// The tile's online softmax of head t in the lane layout above, the interleaved form's operations
// per head: m1 / l1 / corr1 of head t; the probabilities as f16 into ph[t] (keys as columns).
// nk: the tile's keys (those past it score -inf and weigh 0); newk / dnew: the fold's new key's
// index in the tile (-1 if none) and its 4 scores.
__device__ __forceinline__ void ms_tile_softmax(const float (&dt)[2][2], int nk, int newk, const float* dnew,
                                                float scale, float softcap, float& m1, float& l1, float& corr1,
                                                __half (*ph)[40]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float sc[2][2], p[2][2], mx = -INFINITY;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int k = 16 * mt + 8 * r + g;
      sc[mt][r] = k < nk ? finish_score(k == newk ? dnew[t] : dt[mt][r], scale, softcap) : -INFINITY;
      mx = fmaxf(mx, sc[mt][r]);
    }
#pragma unroll
  for (int o = 16; o >= 4; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  const float m_new = fmaxf(m1, mx);  // finite: the tile's first key is always valid
  corr1 = expf(m1 - m_new);
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) p[mt][r] = 16 * mt + 8 * r + g < nk ? expf(sc[mt][r] - m_new) : 0.0f;
  m1 = m_new;
  // attn::warp_sum's tree over the keys: key bit 4 (mt), bit 3 (r) in the lane, then bits 2, 1, 0
  float ps = (p[0][0] + p[1][0]) + (p[0][1] + p[1][1]);
#pragma unroll
  for (int o = 16; o >= 4; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
  l1 = l1 * corr1 + ps;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) ph[t][16 * mt + 8 * r + g] = __float2half_rn(p[mt][r]);
}

// Head h's value of v (held by lane h: g = 0, t = h) in every lane.
__device__ __forceinline__ float ms_head(float v, int h) { return __shfl_sync(0xffffffffu, v, h & 3); }

}  // namespace memra::cuda::attn
