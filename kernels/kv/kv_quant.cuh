#pragma once
// Device quantization of KV cache blocks (shared by the kv append kernels and the fused
// q/k norm + RoPE + append kernel). One warp quantizes one 32-element block, lane j holding x[j];
// the arithmetic follows lib/quant's reference quantizers (ggml's *_ref), operation for operation.
#include <cuda_fp16.h>

#include <cstdint>

#include "quant/types.h"

namespace memra::cuda::kvq {

__device__ __forceinline__ float wmax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float wmin(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The value of the first lane (lowest element index) whose `key` equals `target`: the element a
// sequential `if (best < key) ...` scan keeps on ties.
__device__ __forceinline__ float first_lane_value(float v, float key, float target) {
  const unsigned m = __ballot_sync(0xffffffffu, key == target);
  return __shfl_sync(0xffffffffu, v, m ? __ffs(m) - 1 : 0);
}
// Every block type has an even size and rows start at even offsets, so a 16-bit store is
// aligned. (With a byte-wise memcpy here, kernel-check kv_append saw the low byte of d written
// as 0 on the H200 with nvcc 13.0, while the PTX stored both bytes of the cvt.rn.f16.f32
// result; the 16-bit store is correct and simpler. 2026-11-29.)
__device__ __forceinline__ void put_half(uint8_t* p, float f) {
  *reinterpret_cast<uint16_t*>(p) = __half_as_ushort(__float2half_rn(f));
}
__device__ __forceinline__ int trunc_i8(float f) { return (int)(int8_t)(int)f; }
__device__ __forceinline__ int f2u8(float f) { return (int)(uint8_t)(int)f; }

// q8_0's block (lane j holds x[j]): lane j's quant, and the block's f16 scale in d (every lane).
__device__ __forceinline__ int8_t q8_0_quant(float x, uint16_t& d) {
  const float amax = wmax(fabsf(x));
  const float dv = amax / 127.0f;
  const float id = dv != 0.0f ? 1.0f / dv : 0.0f;
  d = __half_as_ushort(__float2half_rn(dv));
  return (int8_t)roundf(__fmul_rn(x, id));
}
// q8_0's block (lane j holds x[j]): the quants to q[0..31], the f16 scale to d.
__device__ __forceinline__ void quantize_q8_0(float x, int lane, uint8_t* q, uint8_t* d) {
  uint16_t dh;
  reinterpret_cast<int8_t*>(q)[lane] = q8_0_quant(x, dh);
  if (lane == 0) *reinterpret_cast<uint16_t*>(d) = dh;
}

// One warp quantizes one 32-element block: lane j holds x[j]. Arithmetic follows lib/quant's
// reference quantizers (ggml's *_ref), operation for operation.
__device__ inline void quantize_block(QType t, float x, int lane, uint8_t* b) {
  switch (t) {
    case QType::Q8_0:
      quantize_q8_0(x, lane, b + 2, b);
      break;
    case QType::Q4_0:
    case QType::Q5_0: {
      const bool q5 = t == QType::Q5_0;
      const float amax = wmax(fabsf(x));
      // ggml starts from max = 0 and replaces it only on a strictly larger |v|.
      const float mx = amax == 0.0f ? 0.0f : first_lane_value(x, fabsf(x), amax);
      const float d = mx / (q5 ? -16.0f : -8.0f);
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      int q = trunc_i8(__fadd_rn(__fmul_rn(x, id), q5 ? 16.5f : 8.5f));
      q = min(q5 ? 31 : 15, q);
      const int hi = __shfl_down_sync(0xffffffffu, q, 16);
      if (q5) {
        const unsigned qh = __ballot_sync(0xffffffffu, (q & 0x10) != 0);
        if (lane < 16) b[6 + lane] = (uint8_t)((q & 0xF) | ((hi & 0xF) << 4));
        if (lane == 0) {
          put_half(b, d);
          memcpy(b + 2, &qh, 4);
        }
      } else {
        if (lane < 16) b[2 + lane] = (uint8_t)((q & 0xF) | ((hi & 0xF) << 4));
        if (lane == 0) put_half(b, d);
      }
      break;
    }
    case QType::Q4_1:
    case QType::Q5_1: {
      const bool q5 = t == QType::Q5_1;
      const float mn = first_lane_value(x, x, wmin(x));
      const float mx = first_lane_value(x, x, wmax(x));
      const float d = (mx - mn) / (q5 ? 31.0f : 15.0f);
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const float xf = __fadd_rn(__fmul_rn(x - mn, id), 0.5f);
      int q = q5 ? ((int)f2u8(xf)) : min(15, trunc_i8(xf));
      const int hi = __shfl_down_sync(0xffffffffu, q, 16);
      if (q5) {
        const unsigned qh = __ballot_sync(0xffffffffu, (q & 0x10) != 0);
        if (lane < 16) b[8 + lane] = (uint8_t)((q & 0xF) | ((hi & 0xF) << 4));
        if (lane == 0) {
          put_half(b, d);
          put_half(b + 2, mn);
          memcpy(b + 4, &qh, 4);
        }
      } else {
        if (lane < 16) b[4 + lane] = (uint8_t)((q & 0xF) | ((hi & 0xF) << 4));
        if (lane == 0) {
          put_half(b, d);
          put_half(b + 2, mn);
        }
      }
      break;
    }
    default:
      break;
  }
}

// Lane's quant q and the scale d of block b (every lane's d the same) at their places in a q8_0
// split-plane row: the quants at row + 32 b, the f16 scale at row + scale_plane + 2 b.
__device__ __forceinline__ void put_q8_0_planes(uint8_t* row, int scale_plane, int b, int lane, int8_t q, uint16_t d) {
  reinterpret_cast<int8_t*>(row)[32 * b + lane] = q;
  if (lane == 0) *reinterpret_cast<uint16_t*>(row + scale_plane + 2 * b) = d;
}
// Block b of a row in the cache's layout (kvq::load_row): scale_plane 0, the GGUF block at
// row + b * block_bytes (quantize_block); positive, the q8_0 split-plane row (t must be Q8_0): the
// quants at row + 32 b, the f16 scale at row + scale_plane + 2 b. The same arithmetic either way.
__device__ inline void quantize_block_row(QType t, int scale_plane, float x, int lane, uint8_t* row, int b,
                                          int block_bytes) {
  if (scale_plane <= 0) return quantize_block(t, x, lane, row + (int64_t)b * block_bytes);
  uint16_t d;
  const int8_t q = q8_0_quant(x, d);
  put_q8_0_planes(row, scale_plane, b, lane, q, d);
}

}  // namespace memra::cuda::kvq
