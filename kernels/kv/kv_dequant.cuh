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

// n q8_0 values: quants q times the block's scale d.
template <int N>
__device__ __forceinline__ void q8_0_values(const int8_t* q, float d, float* out) {
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = __fmul_rn((float)q[i], d);
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
      q8_0_values<N>(reinterpret_cast<const int8_t*>(b + 2) + e0 % 32, h2f(b), out);
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


// load<N> of a row in the cache's layout: scale_plane 0 is the GGUF block layout (load<N>); a
// positive scale_plane is the q8_0 split-plane row (t must be Q8_0): the row's quants first, one
// byte per element (element e at row + e), then its blocks' f16 scales from byte scale_plane on
// (block b at row + scale_plane + 2 b; scale_plane = the row's element count). Same values as
// load<N> of the same blocks in GGUF order.
template <int N>
__device__ __forceinline__ void load_row(QType t, int scale_plane, const uint8_t* row, int e0, float* out) {
  if (scale_plane <= 0) return load<N>(t, row, e0, out);
  q8_0_values<N>(reinterpret_cast<const int8_t*>(row) + e0, h2f(row + scale_plane + (e0 / 32) * 2), out);
}

// The same values as load<N>, read with aligned 2/4/8/16-byte loads instead of byte loads, for
// the types the decode attention reads most (Q5_1, Q8_0, F16; the rest go to load<N>). The caller
// guarantees the alignment: row 4-byte aligned (F16: 2*N bytes, at most 16).
// Read-only path (__ldg): only for data no thread writes during the kernel. kShared: `row` is a
// copy of the row in shared memory (plain loads; Q5_1 and Q8_0 only, else NaN).
template <bool kShared, class T>
__device__ __forceinline__ T ld_row(const T* p) {
  if constexpr (kShared) return *p;
  else return __ldg(p);
}
template <int N, bool kShared = false>
__device__ __forceinline__ void load_words(QType t, const uint8_t* row, int e0, float* out) {
  static_assert(N >= 1 && N <= 16 && (N & (N - 1)) == 0, "a power of two within a half block");
  if constexpr (N >= 4) {
    if (t == QType::Q5_1) {
      const uint8_t* b = row + (e0 / 32) * 24;
      const uint32_t dm = ld_row<kShared>(reinterpret_cast<const uint32_t*>(b));
      const uint32_t qh = ld_row<kShared>(reinterpret_cast<const uint32_t*>(b + 4));
      const float d = __half2float(__ushort_as_half((unsigned short)(dm & 0xffffu)));
      const float m = __half2float(__ushort_as_half((unsigned short)(dm >> 16)));
      const int j0 = e0 % 32;
      const uint32_t* qs = reinterpret_cast<const uint32_t*>(b + 8 + (j0 & 15));
      const int shift = j0 < 16 ? 0 : 4;
#pragma unroll
      for (int w = 0; w < N / 4; ++w) {
        const uint32_t x = ld_row<kShared>(qs + w);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int j = j0 + 4 * w + k;
          const int lo = (int)((x >> (8 * k + shift)) & 0xFu);
          const int q = lo | (int)((qh >> j) & 1u) << 4;
          out[4 * w + k] = __fadd_rn(__fmul_rn((float)q, d), m);
        }
      }
      return;
    }
  }
  if constexpr (N >= 2) {
    if (t == QType::Q8_0) {
      const uint8_t* b = row + (e0 / 32) * 34;  // 2-byte aligned (34-byte blocks)
      const float d = __half2float(__ushort_as_half(ld_row<kShared>(reinterpret_cast<const unsigned short*>(b))));
      const unsigned short* q = reinterpret_cast<const unsigned short*>(b + 2 + e0 % 32);
#pragma unroll
      for (int w = 0; w < N / 2; ++w) {
        const unsigned short x = ld_row<kShared>(q + w);
        out[2 * w] = __fmul_rn((float)(int8_t)(x & 0xffu), d);
        out[2 * w + 1] = __fmul_rn((float)(int8_t)(x >> 8), d);
      }
      return;
    }
  }
  if constexpr (kShared) {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = __int_as_float(0x7fc00000);  // not staged: NaN shows
    return;
  }
  if (t == QType::F16) {
    const uint8_t* p = row + 2 * e0;
    uint32_t w[(N + 1) / 2];
    if constexpr (N >= 8) {
#pragma unroll
      for (int i = 0; i < N / 8; ++i) {
        const uint4 x = __ldg(reinterpret_cast<const uint4*>(p) + i);
        w[4 * i] = x.x, w[4 * i + 1] = x.y, w[4 * i + 2] = x.z, w[4 * i + 3] = x.w;
      }
    } else if constexpr (N == 4) {
      const uint2 x = __ldg(reinterpret_cast<const uint2*>(p));
      w[0] = x.x, w[1] = x.y;
    } else if constexpr (N == 2) {
      w[0] = __ldg(reinterpret_cast<const uint32_t*>(p));
    } else {
      w[0] = __ldg(reinterpret_cast<const unsigned short*>(p));
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
      out[i] = __half2float(__ushort_as_half((unsigned short)((w[i / 2] >> (16 * (i % 2))) & 0xffffu)));
    return;
  }
  load<N>(t, row, e0, out);
}

}  // namespace memra::cuda::kvq
