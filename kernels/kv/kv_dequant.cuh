#pragma once
// Device dequantization of KV cache elements (shared by kv append/read and attention). Values are
// computed with the same IEEE-rounded operations as lib/quant's dequantize_row: q * d, or
// q * d + m without FMA contraction.
#include <cuda_fp16.h>

#include <cstdint>

#include "quant/types.h"

namespace memra::cuda::kvq {

__device__ __forceinline__ float h2f(const uint8_t* p) {
  __half h;
  memcpy(&h, p, 2);
  return __half2float(h);
}

// n contiguous elements starting at element e0 of a row, with n a power of two <= 32 dividing
// e0 (so the run never crosses a 32-element block).
template <int N>
__device__ __forceinline__ void load(QType t, const uint8_t* row, int e0, float* out) {
  switch (t) {
    case QType::F32: {
      const float* r = reinterpret_cast<const float*>(row) + e0;
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = r[i];
      break;
    }
    case QType::F16: {
      const __half* r = reinterpret_cast<const __half*>(row) + e0;
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = __half2float(r[i]);
      break;
    }
    case QType::Q8_0: {
      const uint8_t* b = row + (e0 / 32) * 34;
      const float d = h2f(b);
      const int8_t* q = reinterpret_cast<const int8_t*>(b + 2) + e0 % 32;
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = __fmul_rn((float)q[i], d);
      break;
    }
    case QType::Q5_1: {
      const uint8_t* b = row + (e0 / 32) * 24;
      const float d = h2f(b), m = h2f(b + 2);
      uint32_t qh;
      memcpy(&qh, b + 4, 4);
      const uint8_t* qs = b + 8;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int j = e0 % 32 + i;
        const int lo = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
        const int q = lo | (int)((qh >> j) & 1u) << 4;
        out[i] = __fadd_rn(__fmul_rn((float)q, d), m);
      }
      break;
    }
    case QType::Q5_0: {
      const uint8_t* b = row + (e0 / 32) * 22;
      const float d = h2f(b);
      uint32_t qh;
      memcpy(&qh, b + 2, 4);
      const uint8_t* qs = b + 6;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int j = e0 % 32 + i;
        const int lo = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
        const int q = (lo | (int)((qh >> j) & 1u) << 4) - 16;
        out[i] = __fmul_rn((float)q, d);
      }
      break;
    }
    case QType::Q4_0: {
      const uint8_t* b = row + (e0 / 32) * 18;
      const float d = h2f(b);
      const uint8_t* qs = b + 2;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int j = e0 % 32 + i;
        const int q = (j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4)) - 8;
        out[i] = __fmul_rn((float)q, d);
      }
      break;
    }
    case QType::Q4_1: {
      const uint8_t* b = row + (e0 / 32) * 20;
      const float d = h2f(b), m = h2f(b + 2);
      const uint8_t* qs = b + 4;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int j = e0 % 32 + i;
        const int q = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
        out[i] = __fadd_rn(__fmul_rn((float)q, d), m);
      }
      break;
    }
    default:
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = __int_as_float(0x7fc00000);  // unsupported: NaN shows
  }
}

}  // namespace memra::cuda::kvq
