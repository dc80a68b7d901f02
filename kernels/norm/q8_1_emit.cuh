#pragma once
// Device helpers shared by the kernels that emit q8_1 activations (norm, act): one warp writes
// one 32-element block, lane i holding element i. Byte-identical to lib/quant's reference
// quantize_row(Q8_1): d = amax/127, id = d ? 1/d : 0, q = roundf(v * id), s = d * sum(q).
#include <cuda_fp16.h>

#include <cstdint>

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

// The same block in the split q8s form of the mmvs matvec (kernels/matvec/mmvs.h): quant e at
// xq[e], {f16-rounded d, exact sum of the quants} at *ds. Same d and quants as emit_q8_1_block.
__device__ __forceinline__ void emit_q8s_block(float v, int lane, int8_t* xq, float2* ds) {
  const float amax = warp_max_f32(fabsf(v));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = (int)roundf(__fmul_rn(v, id));
  const int sum = warp_sum_i32(q);
  xq[lane] = (int8_t)q;
  if (lane == 0) *ds = make_float2(__half2float(__float2half_rn(d)), (float)sum);
}

// The same two blocks quantized by one thread that holds all 32 values (no shuffles): the same
// amax (a max is exact in any order), d, quants and sum, so the same bytes as the warp forms.
__device__ __forceinline__ void quantize_own_block(const float (&v)[32], int8_t (&q)[32], float& d, int& sum) {
  float amax = 0.0f;
#pragma unroll
  for (int e = 0; e < 32; ++e) amax = fmaxf(amax, fabsf(v[e]));
  d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  sum = 0;
#pragma unroll
  for (int e = 0; e < 32; ++e) {
    q[e] = (int8_t)(int)roundf(__fmul_rn(v[e], id));
    sum += q[e];
  }
}
__device__ __forceinline__ uint32_t pack4(const int8_t* q) {
  return (uint32_t)(uint8_t)q[0] | (uint32_t)(uint8_t)q[1] << 8 | (uint32_t)(uint8_t)q[2] << 16 |
         (uint32_t)(uint8_t)q[3] << 24;
}
// xq: the block's 32 quants (16-byte aligned: 16-byte stores, else byte stores).
__device__ __forceinline__ void emit_q8s_own_block(const float (&v)[32], int8_t* xq, float2* ds) {
  int8_t q[32];
  float d;
  int sum;
  quantize_own_block(v, q, d, sum);
  if (reinterpret_cast<uintptr_t>(xq) % 16 == 0) {
    uint4* p = reinterpret_cast<uint4*>(xq);
    p[0] = make_uint4(pack4(q), pack4(q + 4), pack4(q + 8), pack4(q + 12));
    p[1] = make_uint4(pack4(q + 16), pack4(q + 20), pack4(q + 24), pack4(q + 28));
  } else {
#pragma unroll
    for (int e = 0; e < 32; ++e) xq[e] = q[e];
  }
  *ds = make_float2(__half2float(__float2half_rn(d)), (float)sum);
}
// blk: the 36-byte q8_1 block (4-byte aligned: word stores, else byte stores).
__device__ __forceinline__ void emit_q8_1_own_block(const float (&v)[32], uint8_t* blk) {
  int8_t q[32];
  float d;
  int sum;
  quantize_own_block(v, q, d, sum);
  const __half hd = __float2half_rn(d);
  const __half hs = __float2half_rn(__fmul_rn((float)sum, d));
  if (reinterpret_cast<uintptr_t>(blk) % 4 == 0) {
    uint32_t* p = reinterpret_cast<uint32_t*>(blk);
    p[0] = (uint32_t)__half_as_ushort(hd) | (uint32_t)__half_as_ushort(hs) << 16;
#pragma unroll
    for (int k = 0; k < 8; ++k) p[1 + k] = pack4(q + 4 * k);
  } else {
    reinterpret_cast<__half*>(blk)[0] = hd;  // as emit_q8_1_block: 2-byte aligned at least
    reinterpret_cast<__half*>(blk)[1] = hs;
#pragma unroll
    for (int e = 0; e < 32; ++e) reinterpret_cast<int8_t*>(blk + 4)[e] = q[e];
  }
}

}  // namespace memra::cuda
