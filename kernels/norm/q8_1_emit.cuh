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

}  // namespace memra::cuda
