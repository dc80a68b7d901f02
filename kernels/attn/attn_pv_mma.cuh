#pragma once
// The decode attention's P x V of one warp's 32-key tile on tensor cores (AttnParams::pv_mma),
// from the tile's q5_1 V head slices staged in shared memory (kernels/attn/attn_decode.cu).
#include <cuda_fp16.h>

#include <cstdint>

#include "attn/attn_common.cuh"

namespace memra::cuda::attn {

constexpr int kVsSlice = 96;  // bytes of a q5_1 head slice at head_dim 128 (4 blocks of 24)

// PV (AttnParams::pv_mma): P x V of a warp's 32-key tile on tensor cores. A = V^T (rows: the
// head's 128 elements as 8 m-tiles of 16, cols: keys), B = P^T (keys x the G heads as n = 8
// columns, zero past G), C = the G heads' unnormalized outputs. Lane (g, t) = (lane / 4, lane % 4)
// builds A from keys 2t, 2t + 1 (+ 8, + 16, + 24) and elements g + 8 e of each q5_1 block: one
// f16 pair per (element, key pair), the two keys' quants as the f16 values 1024 + q (exact),
// minus 1024 (exact), times d plus m in one f16 fma.
// The quant pairs (key k0 low half, key k1 high half) of elements g, g + 8, g + 16, g + 24 of one
// q5_1 block: x / y = qs[g] / qs[g + 8] (zero-extended), qh the block's high bits.
__device__ __forceinline__ void q5_1_pairs(uint32_t qh0, uint32_t qh1, uint32_t x0, uint32_t x1, uint32_t y0,
                                           uint32_t y1, int g, uint32_t (&q)[4]) {
  const uint32_t xp = __byte_perm(x0, x1, 0x5410), yp = __byte_perm(y0, y1, 0x5410);
  const uint32_t s0 = qh0 >> g, s1 = qh1 >> g;
  const uint32_t ha = __byte_perm(s0, s1, 0x5410), hb = __byte_perm(s0, s1, 0x7632);  // bits g, g + 8 | g + 16, g + 24
  constexpr uint32_t kLo = 0x000F000Fu, kHi = 0x00100010u, kMagic = 0x64006400u;
  q[0] = (xp & kLo) | ((ha << 4) & kHi) | kMagic;
  q[1] = (yp & kLo) | ((ha >> 4) & kHi) | kMagic;
  q[2] = ((xp >> 4) & kLo) | ((hb << 4) & kHi) | kMagic;
  q[3] = ((yp >> 4) & kLo) | ((hb >> 4) & kHi) | kMagic;
}
__device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_h2(uint32_t u) { return *reinterpret_cast<const __half2*>(&u); }

// 16 keys of a tile: C[mt] += V^T P^T over rows 0 .. 15 of vt (rows >= nk contribute 0: their d
// and m are masked to 0, and their probabilities must be 0); b0 / b1: the B fragment of P^T (lane
// (g, t): head g, keys 2t, 2t + 1 / 8 + 2t, 9 + 2t as f16 pairs).
__device__ __forceinline__ void pv_k16_q5_1(const uint8_t (*vt)[kVsSlice], int nk, uint32_t b0, uint32_t b1,
                                            float (&c)[8][4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const __half2 k1024 = __half2half2(__ushort_as_half((unsigned short)0x6400u));
#pragma unroll
  for (int blk = 0; blk < 4; ++blk) {
    uint32_t af[2][4];  // m-tiles 2 blk, 2 blk + 1
#pragma unroll
    for (int kp = 0; kp < 2; ++kp) {
      const int k = 2 * t + 8 * kp;
      const uint8_t* r0 = &vt[k][24 * blk];
      const uint8_t* r1 = &vt[k + 1][24 * blk];
      const uint2 h0 = *reinterpret_cast<const uint2*>(r0), h1 = *reinterpret_cast<const uint2*>(r1);  // {d, m}, qh
      uint32_t q[4];
      q5_1_pairs(h0.y, h1.y, r0[8 + g], r1[8 + g], r0[16 + g], r1[16 + g], g, q);
      const uint32_t vmask = (k < nk ? 0x0000ffffu : 0u) | (k + 1 < nk ? 0xffff0000u : 0u);
      const __half2 d2 = bits_h2(__byte_perm(h0.x, h1.x, 0x5410) & vmask);
      const __half2 m2 = bits_h2(__byte_perm(h0.x, h1.x, 0x7632) & vmask);
#pragma unroll
      for (int e = 0; e < 4; ++e)  // element g + 8 e: m-tile 2 blk + e / 2, row g + 8 (e % 2)
        af[e >> 1][2 * kp + (e & 1)] = h2_bits(__hfma2(__hsub2(bits_h2(q[e]), k1024), d2, m2));
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) mma16816(c[2 * blk + u], af[u][0], af[u][1], af[u][2], af[u][3], b0, b1);
  }
}

// One warp's tile: C[mt] += V^T P^T over keys 0 .. 31 of vt (keys >= nk contribute 0: their d and m
// are masked to 0, and their probabilities in ph are 0). ph: [8 heads][40] f16, keys in cols 0..31.
__device__ __forceinline__ void pv_tile_mma(const uint8_t (&vt)[32][kVsSlice], const __half (&ph)[8][40], int nk,
                                            float (&c)[8][4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&ph[g][16 * ks + 2 * t]);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(&ph[g][16 * ks + 2 * t + 8]);
    pv_k16_q5_1(&vt[16 * ks], nk - 16 * ks, b0, b1, c);
  }
}

}  // namespace memra::cuda::attn
