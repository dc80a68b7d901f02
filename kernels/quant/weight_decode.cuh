#pragma once
// Device-side decoding of GGUF weight blocks into 32-element "chunks" that every quantized kernel
// shares (dp4a matvec and dequantize): chunk value e (0..31) = d[e/16] * q[e] + m[e/16], with q
// as int8 packed four to an int (little-endian, element 4k in the low byte of q[k]).
//
// Why chunks of 32: the q8_1 activation block is 32 wide, so a chunk's integer dot product with
// one activation block is exact (dp4a), and only the per-16/per-32 scales are applied in float.
// K-quant superblocks (256) are 8 chunks; IQ4_XS too. Two scales per chunk cover the types whose
// scale changes every 16 elements (Q2_K, Q3_K, Q6_K).
//
// The float scale/offset expressions repeat ggml's dequantizers operation by operation
// (d*sc in float, then *q, then +/- min), so dequantize_value() below is bit-identical to the
// CPU reference; fmul_rn/fadd_rn stop nvcc from contracting them into an FMA.
//
// Everything here is __host__ __device__ with plain-C++ fallbacks for the SIMD intrinsics, so the
// decoders are unit-tested on the CPU against lib/quant (tests/backend_cuda/test_weight_decode).
#include <cstdint>

#include "quant/types.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define MEMRA_HD __host__ __device__ __forceinline__
#define MEMRA_UNROLL _Pragma("unroll")
#else
#define MEMRA_HD inline
#define MEMRA_UNROLL
#endif
#ifndef __CUDA_ARCH__
#include "core/half.h"
#endif

namespace memra::cuda::wq {

struct Chunk {
  int q[8];
  float d[2];
  float m[2];
};

MEMRA_HD float ld_half_bits(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#else
  return fp16_to_f32(h);
#endif
}
MEMRA_HD float ld_half(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
#else
  return fp16_to_f32(*reinterpret_cast<const uint16_t*>(p));
#endif
}

// Per-byte SIMD helpers: the device intrinsics, or their definition in plain C++ on the host.
MEMRA_HD uint32_t vsub4(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vsub4(a, b);
#else
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= (((a >> (8 * i)) - (b >> (8 * i))) & 0xFFu) << (8 * i);
  return r;
#endif
}
// prmt.b32 in its default mode with all four selector bits: a selector nibble's bits 0..2 pick one of
// the 8 bytes of (x, y), and its bit 3 set replaces that byte by its sign replicated (0x00 or 0xFF),
// which __byte_perm does not promise (it documents three selector bits); the low 16 bits of s are read.
MEMRA_HD uint32_t prmt_sx(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
  return r;
#else
  const uint64_t v = (uint64_t)x | ((uint64_t)y << 32);
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t n = (s >> (4 * i)) & 0xFu;
    uint32_t b = (uint32_t)(v >> (8 * (n & 7u))) & 0xFFu;
    if (n & 8u) b = (b & 0x80u) ? 0xFFu : 0x00u;
    r |= b << (8 * i);
  }
  return r;
#endif
}
// __byte_perm: the three low bits of each selector nibble (on the host, prmt_sx without the sign bits).
MEMRA_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  return prmt_sx(x, y, s & 0x7777u);
#endif
}
MEMRA_HD int dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i) c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
  return c;
#endif
}
MEMRA_HD float fmul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
MEMRA_HD float fadd_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
// 4 bytes from a 2-byte-aligned address (blocks of 18, 22, 34, 110, 210 bytes).
MEMRA_HD uint32_t ld_u32_a2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return (uint32_t)h[0] | ((uint32_t)h[1] << 16);
}
MEMRA_HD uint32_t ld_u32_a4(const uint8_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Bits 0..3 of n to bit 4 of bytes 0..3 (the fifth bit of Q5 quants).
MEMRA_HD uint32_t spread4_to_bit4(uint32_t n) {
  return ((n & 1u) << 4) | ((n & 2u) << 11) | ((n & 4u) << 18) | ((n & 8u) << 25);
}

// IQ4_NL/IQ4_XS codebook (a format fact), and its entries i .. i + 3 plus add as one word (bytes in
// order; add = 1 on entries 8 .. 15 gives iq4_dot8's second table, 2 .. 114: every byte positive).
inline constexpr int8_t kIq4Codebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
MEMRA_HD constexpr uint32_t iq4_word(int i, int add = 0) {
  return (uint32_t)(uint8_t)(kIq4Codebook[i] + add) | ((uint32_t)(uint8_t)(kIq4Codebook[i + 1] + add) << 8) |
         ((uint32_t)(uint8_t)(kIq4Codebook[i + 2] + add) << 16) | ((uint32_t)(uint8_t)(kIq4Codebook[i + 3] + add) << 24);
}
// The exact sum over the 8 IQ4 indices of w (index e at bits 4 e .. 4 e + 3) of codebook value times
// activation byte e (bytes of x0 then x1), added to acc. Two sign-mode permutes per four indices, no
// selector arithmetic: P1 = prmt_sx(entries 0..7, s) is the entry where the index is below 8 and the
// sign of an entry (all negative: -1) where it is not; P2 = prmt_sx(entries 8..15 plus one, s ^ 8 per
// nibble) is 0 (the sign of a positive byte) below 8 and entry + 1 from 8. P1 + P2 is the codebook
// value in both cases and dp4a is linear over exact integer sums, so the result equals dp4a over
// iq4_lookup4's bytes (kernel-check mmvs_id iq4_prmt/exhaustive, tests/core test_quant Iq4PermuteSum).
MEMRA_HD int iq4_dot8(uint32_t w, int x0, int x1, int acc) {
  const uint32_t f = w ^ 0x88888888u;
  int p = dp4a((int)prmt_sx(iq4_word(0), iq4_word(4), w), x0, 0);
  acc = dp4a((int)prmt_sx(iq4_word(8, 1), iq4_word(12, 1), f), x0, acc);
  p = dp4a((int)prmt_sx(iq4_word(0), iq4_word(4), w >> 16), x1, p);
  acc = dp4a((int)prmt_sx(iq4_word(8, 1), iq4_word(12, 1), f >> 16), x1, acc);
  return acc + p;
}
// Lookup of four 4-bit indices (one per byte) at once.
MEMRA_HD uint32_t iq4_lookup4(uint32_t idx) {
  uint32_t sel = 0;
MEMRA_UNROLL
  for (int i = 0; i < 4; ++i) sel |= ((idx >> (8 * i)) & 7u) << (4 * i);
  const uint32_t lo = byte_perm(iq4_word(0), iq4_word(4), sel);   // entries 0..7
  const uint32_t hi = byte_perm(iq4_word(8), iq4_word(12), sel);  // entries 8..15
  const uint32_t mask = ((idx >> 3) & 0x01010101u) * 0xFFu;
  return (hi & mask) | (lo & ~mask);
}

// Q4_K/Q5_K 6-bit scale and min j (0..7) from the 12 packed bytes.
MEMRA_HD void scale_min_k4(int j, const uint8_t* s, int& sc, int& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K 6-bit signed scale i (0..15) from the 12 packed bytes.
MEMRA_HD int scale_q3k(int i, const uint8_t* s) {
  const int lo = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
  const int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

template <QType T>
struct WTraits;

template <>
struct WTraits<QType::Q4_0> {
  static constexpr int kElems = 32, kBytes = 18, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a2(b + 2 + 4 * k);
      c.q[k] = (int)vsub4(v & 0x0F0F0F0Fu, 0x08080808u);
      c.q[k + 4] = (int)vsub4((v >> 4) & 0x0F0F0F0Fu, 0x08080808u);
    }
    c.m[0] = c.m[1] = 0.f;
  }
};

template <>
struct WTraits<QType::Q4_1> {
  static constexpr int kElems = 32, kBytes = 20, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = true;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
    c.m[0] = c.m[1] = ld_half(b + 2);
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a4(b + 4 + 4 * k);
      c.q[k] = (int)(v & 0x0F0F0F0Fu);
      c.q[k + 4] = (int)((v >> 4) & 0x0F0F0F0Fu);
    }
  }
};

template <>
struct WTraits<QType::Q5_0> {
  static constexpr int kElems = 32, kBytes = 22, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
    const uint32_t qh = ld_u32_a2(b + 2);
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a2(b + 6 + 4 * k);
      const uint32_t lo = (v & 0x0F0F0F0Fu) | spread4_to_bit4(qh >> (4 * k));
      const uint32_t hi = ((v >> 4) & 0x0F0F0F0Fu) | spread4_to_bit4(qh >> (4 * k + 16));
      c.q[k] = (int)vsub4(lo, 0x10101010u);
      c.q[k + 4] = (int)vsub4(hi, 0x10101010u);
    }
    c.m[0] = c.m[1] = 0.f;
  }
};

template <>
struct WTraits<QType::Q5_1> {
  static constexpr int kElems = 32, kBytes = 24, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = true;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
    c.m[0] = c.m[1] = ld_half(b + 2);
    const uint32_t qh = ld_u32_a4(b + 4);
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a4(b + 8 + 4 * k);
      c.q[k] = (int)((v & 0x0F0F0F0Fu) | spread4_to_bit4(qh >> (4 * k)));
      c.q[k + 4] = (int)(((v >> 4) & 0x0F0F0F0Fu) | spread4_to_bit4(qh >> (4 * k + 16)));
    }
  }
};

template <>
struct WTraits<QType::Q8_0> {
  static constexpr int kElems = 32, kBytes = 34, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) c.q[k] = (int)ld_u32_a2(b + 2 + 4 * k);
    c.m[0] = c.m[1] = 0.f;
  }
};

template <>
struct WTraits<QType::IQ4_NL> {
  static constexpr int kElems = 32, kBytes = 18, kSubs = 1;
  static constexpr bool kSplit16 = false, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int, Chunk& c) {
    c.d[0] = c.d[1] = ld_half(b);
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a2(b + 2 + 4 * k);
      c.q[k] = (int)iq4_lookup4(v & 0x0F0F0F0Fu);
      c.q[k + 4] = (int)iq4_lookup4((v >> 4) & 0x0F0F0F0Fu);
    }
    c.m[0] = c.m[1] = 0.f;
  }
};

template <>
struct WTraits<QType::IQ4_XS> {
  // d@0, scales_h@2 (u16), scales_l@4 (4 bytes), qs@8 (128 bytes)
  static constexpr int kElems = 256, kBytes = 136, kSubs = 8;
  static constexpr bool kSplit16 = false, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int ib, Chunk& c) {
    const float d = ld_half(b);
    const uint32_t sh = *reinterpret_cast<const uint16_t*>(b + 2);
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (int)(((sh >> (2 * ib)) & 3u) << 4);
    c.d[0] = c.d[1] = d * (float)(ls - 32);
    const uint8_t* qs = b + 8 + 16 * ib;
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) {
      const uint32_t v = ld_u32_a4(qs + 4 * k);
      c.q[k] = (int)iq4_lookup4(v & 0x0F0F0F0Fu);
      c.q[k + 4] = (int)iq4_lookup4((v >> 4) & 0x0F0F0F0Fu);
    }
    c.m[0] = c.m[1] = 0.f;
  }
};

template <>
struct WTraits<QType::Q2_K> {
  // scales@0 (16), qs@16 (64), d@80, dmin@82
  static constexpr int kElems = 256, kBytes = 84, kSubs = 8;
  static constexpr bool kSplit16 = true, kHasMin = true;
  MEMRA_HD static void decode(const uint8_t* b, int j, Chunk& c) {
    const int h = j / 4, shift = 2 * (j % 4);
    const float d = ld_half(b + 80), dmin = ld_half(b + 82);
MEMRA_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int sc = b[8 * h + 2 * (j % 4) + i];
      c.d[i] = d * (float)(sc & 0xF);
      c.m[i] = -(dmin * (float)(sc >> 4));
    }
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) c.q[k] = (int)((ld_u32_a4(b + 16 + 32 * h + 4 * k) >> shift) & 0x03030303u);
  }
};

template <>
struct WTraits<QType::Q3_K> {
  // hmask@0 (32), qs@32 (64), scales@96 (12), d@108
  static constexpr int kElems = 256, kBytes = 110, kSubs = 8;
  static constexpr bool kSplit16 = true, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int j, Chunk& c) {
    const int h = j / 4, j4 = j % 4, shift = 2 * j4, hbit = 4 * h + j4;
    const float d = ld_half(b + 108);
MEMRA_UNROLL
    for (int i = 0; i < 2; ++i) c.d[i] = d * (float)scale_q3k(8 * h + 2 * j4 + i, b + 96);
    c.m[0] = c.m[1] = 0.f;
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t low = (ld_u32_a2(b + 32 + 32 * h + 4 * k) >> shift) & 0x03030303u;
      const uint32_t hb = (ld_u32_a2(b + 4 * k) >> hbit) & 0x01010101u;
      c.q[k] = (int)vsub4(low, (hb ^ 0x01010101u) << 2);
    }
  }
};

template <>
struct WTraits<QType::Q4_K> {
  // d@0, dmin@2, scales@4 (12), qs@16 (128)
  static constexpr int kElems = 256, kBytes = 144, kSubs = 8;
  static constexpr bool kSplit16 = false, kHasMin = true;
  MEMRA_HD static void decode(const uint8_t* b, int j, Chunk& c) {
    int sc, mn;
    scale_min_k4(j, b + 4, sc, mn);
    c.d[0] = c.d[1] = ld_half(b) * (float)sc;
    c.m[0] = c.m[1] = -(ld_half(b + 2) * (float)mn);
    const int nib = 4 * (j & 1);
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) c.q[k] = (int)((ld_u32_a4(b + 16 + 32 * (j / 2) + 4 * k) >> nib) & 0x0F0F0F0Fu);
  }
};

template <>
struct WTraits<QType::Q5_K> {
  // d@0, dmin@2, scales@4 (12), qh@16 (32), qs@48 (128)
  static constexpr int kElems = 256, kBytes = 176, kSubs = 8;
  static constexpr bool kSplit16 = false, kHasMin = true;
  MEMRA_HD static void decode(const uint8_t* b, int j, Chunk& c) {
    int sc, mn;
    scale_min_k4(j, b + 4, sc, mn);
    c.d[0] = c.d[1] = ld_half(b) * (float)sc;
    c.m[0] = c.m[1] = -(ld_half(b + 2) * (float)mn);
    const int nib = 4 * (j & 1);
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t lo = (ld_u32_a4(b + 48 + 32 * (j / 2) + 4 * k) >> nib) & 0x0F0F0F0Fu;
      const uint32_t hb = (ld_u32_a4(b + 16 + 4 * k) >> j) & 0x01010101u;
      c.q[k] = (int)(lo | (hb << 4));
    }
  }
};

template <>
struct WTraits<QType::Q6_K> {
  // ql@0 (128), qh@128 (64), scales@192 (16 x int8), d@208
  static constexpr int kElems = 256, kBytes = 210, kSubs = 8;
  static constexpr bool kSplit16 = true, kHasMin = false;
  MEMRA_HD static void decode(const uint8_t* b, int j, Chunk& c) {
    const int h = j / 4, t = j % 4;
    const float d = ld_half(b + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    c.d[0] = d * (float)sc[8 * h + 2 * t];
    c.d[1] = d * (float)sc[8 * h + 2 * t + 1];
    c.m[0] = c.m[1] = 0.f;
    const uint8_t* ql = b + 64 * h + 32 * (t & 1);
    const uint8_t* qh = b + 128 + 32 * h;
    const int nib = 4 * (t >> 1), hs = 2 * t;
MEMRA_UNROLL
    for (int k = 0; k < 8; ++k) {
      const uint32_t v = ((ld_u32_a2(ql + 4 * k) >> nib) & 0x0F0F0F0Fu) |
                         (((ld_u32_a2(qh + 4 * k) >> hs) & 0x03030303u) << 4);
      c.q[k] = (int)vsub4(v, 0x20202020u);
    }
  }
};

// Element e (0..31) of a decoded chunk as ggml's dequantizer computes it.
template <QType T>
MEMRA_HD float dequantize_value(const Chunk& c, int e) {
  const int q = (int)(int8_t)(c.q[e >> 2] >> (8 * (e & 3)));
  const int h = e >> 4;
  if constexpr (WTraits<T>::kHasMin) return fadd_rn(fmul_rn(c.d[h], (float)q), c.m[h]);
  else return fmul_rn(c.d[h], (float)q);
}

// Dot product of a decoded chunk with one q8_1 activation block (36 bytes, 4-byte aligned):
// exact integer sums per 16 elements, then the scales in f32. The min term uses the exact sum of
// the activation quants (dp4a with ones), not the block's f16-rounded s.
template <QType T>
MEMRA_HD float chunk_dot_q8_1(const Chunk& ch, const uint8_t* xb) {
  using Tr = WTraits<T>;
  const float dx = ld_half(xb);
  int xq[8];
MEMRA_UNROLL
  for (int k = 0; k < 8; ++k) xq[k] = (int)ld_u32_a4(xb + 4 + 4 * k);
  int s0 = 0, s1 = 0;
MEMRA_UNROLL
  for (int k = 0; k < 4; ++k) s0 = dp4a(ch.q[k], xq[k], s0);
MEMRA_UNROLL
  for (int k = 4; k < 8; ++k) s1 = dp4a(ch.q[k], xq[k], s1);
  float part;
  if constexpr (Tr::kSplit16) part = ch.d[0] * (float)s0 + ch.d[1] * (float)s1;
  else part = ch.d[0] * (float)(s0 + s1);
  if constexpr (Tr::kHasMin) {
    int t0 = 0, t1 = 0;
MEMRA_UNROLL
    for (int k = 0; k < 4; ++k) t0 = dp4a(0x01010101, xq[k], t0);
MEMRA_UNROLL
    for (int k = 4; k < 8; ++k) t1 = dp4a(0x01010101, xq[k], t1);
    if constexpr (Tr::kSplit16) part += ch.m[0] * (float)t0 + ch.m[1] * (float)t1;
    else part += ch.m[0] * (float)(t0 + t1);
  }
  return dx * part;
}

}  // namespace memra::cuda::wq

// The quantized weight types with a CUDA path, for dispatch switches: X(Name).
#define MEMRA_CUDA_WTYPES(X) \
  X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q8_0) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) X(IQ4_NL) X(IQ4_XS)
