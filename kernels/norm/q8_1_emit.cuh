#pragma once
// Device helpers shared by the kernels that emit q8_1 activations (norm, act): one warp writes
// one 32-element block, lane i holding element i. Byte-identical to lib/quant's reference
// quantize_row(Q8_1): d = amax/127, id = d ? 1/d : 0, q = roundf(v * id), s = d * sum(q).
#include <cuda_fp16.h>

#include <cstdint>

#include "matvec/q8s_order.h"

namespace memra::cuda {

inline constexpr int kQ81BlockBytes = 36;

__device__ __forceinline__ float warp_sum_f32(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max_f32(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ int warp_sum_i32(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// All 32 lanes must call it; `blk` points at the 36-byte block.
__device__ __forceinline__ void emit_q8_1_block(float v, int lane, uint8_t* blk) {
  const float amax = warp_max_f32(fabsf(v));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = (int)roundf(__fmul_rn(v, id));
  const int sum = warp_sum_i32(q);
  reinterpret_cast<int8_t*>(blk + 4)[lane] = (int8_t)q;
  if (lane == 0) {
    const __half hd = __float2half_rn(d);
    const __half hs = __float2half_rn(__fmul_rn((float)sum, d));
    reinterpret_cast<__half*>(blk)[0] = hd;
    reinterpret_cast<__half*>(blk)[1] = hs;
  }
}

// The same block in the split q8s form of the mmvs matvec (kernels/matvec/mmvs.h): the block's
// quants are elements e0 .. e0 + 31 of the row whose quants start at xq_row, stored in the plain
// or an interleaved order (q8s_order.h); {f16-rounded d, exact sum of the quants} at *ds. Same d
// and quants as emit_q8_1_block.
__device__ __forceinline__ void emit_q8s_block(float v, int lane, int8_t* xq_row, int64_t e0, q8s::Order order, float2* ds) {
  const float amax = warp_max_f32(fabsf(v));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = (int)roundf(__fmul_rn(v, id));
  const int sum = warp_sum_i32(q);
  xq_row[q8s::byte_of(e0 + lane, order)] = (int8_t)q;
  if (lane == 0) *ds = make_float2(__half2float(__float2half_rn(d)), (float)sum);
}
// il = false the plain order, true the interleaved one.
__device__ __forceinline__ void emit_q8s_block(float v, int lane, int8_t* xq_row, int64_t e0, bool il, float2* ds) {
  emit_q8s_block(v, lane, xq_row, e0, il ? q8s::Order::il : q8s::Order::plain, ds);
}

// The same two blocks with a block's 32 values spread over 8 consecutive lanes (lane % 8 = k
// holds elements 4k .. 4k + 3): the same amax (a max is exact in any order), d, quants and sum
// (exact integers), so the same bytes as the warp forms above. All 32 lanes call it (the warp's
// four blocks at once); `valid` (uniform over the 8 lanes of a block) gates the stores only.
__device__ __forceinline__ void quantize_block8(const float (&v)[4], int8_t (&q)[4], float& d, int& sum) {
  float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
#pragma unroll
  for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int s = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int qi = (int)roundf(__fmul_rn(v[e], id));
    q[e] = (int8_t)qi;
    s += qi;
  }
#pragma unroll
  for (int o = 1; o < 8; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  sum = s;
}
__device__ __forceinline__ uint32_t pack4(const int8_t (&q)[4]) {
  return (uint32_t)(uint8_t)q[0] | (uint32_t)(uint8_t)q[1] << 8 | (uint32_t)(uint8_t)q[2] << 16 |
         (uint32_t)(uint8_t)q[3] << 24;
}
// Quants 4k .. 4k + 3 of a block whose 32 quants start at `quants`: one word store when aligned.
__device__ __forceinline__ void store_quants4(int8_t* quants, int k, const int8_t (&q)[4]) {
  if (reinterpret_cast<uintptr_t>(quants) % 4 == 0) {
    reinterpret_cast<uint32_t*>(quants)[k] = pack4(q);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) quants[4 * k + e] = q[e];
  }
}
// This lane's quants are elements e .. e + 3 (e % 4 == 0; block e / 32, part k = lane % 8) of the
// row whose quants start at xq_row, in the plain (il = false) or the interleaved order
// (q8s_order.h: the 4 quants stay together, 4-byte aligned when xq_row is); ds: the block's
// {d, sum}.
__device__ __forceinline__ void emit_q8s_block8(const float (&v)[4], int lane, bool valid, int8_t* xq_row, int64_t e,
                                                q8s::Order order, float2* ds);
__device__ __forceinline__ void emit_q8s_block8(const float (&v)[4], int lane, bool valid, int8_t* xq_row, int64_t e,
                                                bool il, float2* ds) {
  emit_q8s_block8(v, lane, valid, xq_row, e, il ? q8s::Order::il : q8s::Order::plain, ds);
}
// The same in any order of q8s_order.h (the 4 quants stay together in every order).
__device__ __forceinline__ void emit_q8s_block8(const float (&v)[4], int lane, bool valid, int8_t* xq_row, int64_t e,
                                                q8s::Order order, float2* ds) {
  int8_t q[4];
  float d;
  int sum;
  quantize_block8(v, q, d, sum);
  if (!valid) return;
  store_quants4(xq_row + q8s::byte_of(e, order), 0, q);
  if ((lane & 7) == 0) *ds = make_float2(__half2float(__float2half_rn(d)), (float)sum);
}
// blk: the 36-byte q8_1 block.
__device__ __forceinline__ void emit_q8_1_block8(const float (&v)[4], int lane, bool valid, uint8_t* blk) {
  int8_t q[4];
  float d;
  int sum;
  quantize_block8(v, q, d, sum);
  if (!valid) return;
  const int k = lane & 7;
  store_quants4(reinterpret_cast<int8_t*>(blk + 4), k, q);
  if (k == 0) {
    reinterpret_cast<__half*>(blk)[0] = __float2half_rn(d);  // as emit_q8_1_block (2-byte aligned)
    reinterpret_cast<__half*>(blk)[1] = __float2half_rn(__fmul_rn((float)sum, d));
  }
}

}  // namespace memra::cuda
