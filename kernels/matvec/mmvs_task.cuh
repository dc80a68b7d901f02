#pragma once
// The 64-weight tasks of the mmvs matvec (mmvs.h): load() fetches a task's weight bytes with
// aligned 16-byte loads from either body order of split_layout.h, dot() is its contribution against one q8s activation row. __host__
// __device__ so tests/backend_cuda/test_mmvs_emul.cpp replays them on the CPU on real layouts.
#include <cstdint>
#include <cstring>

#include "matvec/q8s_order.h"
#include "quant/weight_decode.cuh"

#ifndef __CUDACC__
// Host stand-ins for CUDA's vector types (the replay only).
struct uint4 { uint32_t x, y, z, w; };
struct uint2 { uint32_t x, y; };
struct int4 { int x, y, z, w; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return {x, y, z, w}; }
#endif

namespace memra::cuda::mmvs {

// Weights stream once: 16-byte loads that do not allocate in L1 (which keeps the activations).
#ifdef __CUDA_ARCH__
MEMRA_HD uint4 ldw16(const uint8_t* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}
MEMRA_HD uint2 ldw8(const uint8_t* p) {
  uint2 r;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
  return r;
}
MEMRA_HD uint32_t ldw4(const void* p) {
  uint32_t r;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(r) : "l"(p));
  return r;
}
MEMRA_HD uint32_t ldw2(const void* p) {
  unsigned short r;
  asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(r) : "l"(p));
  return r;
}
MEMRA_HD int4 ldx16(const int8_t* p) { return __ldg(reinterpret_cast<const int4*>(p)); }
MEMRA_HD float4 ldds16(const float2* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
#else
// The CPU replay (tests/backend_cuda/test_mmvs_emul.cpp): the same values through memcpy.
template <class V>
inline V ld_host(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
inline uint4 ldw16(const uint8_t* p) { return ld_host<uint4>(p); }
inline uint2 ldw8(const uint8_t* p) { return ld_host<uint2>(p); }
inline uint32_t ldw4(const void* p) { return ld_host<uint32_t>(p); }
inline uint32_t ldw2(const void* p) { return ld_host<uint16_t>(p); }
inline int4 ldx16(const int8_t* p) { return ld_host<int4>(p); }
inline float4 ldds16(const float2* p) { return ld_host<float4>(p); }
#endif
MEMRA_HD float half_lo(uint32_t v) { return wq::ld_half_bits((uint16_t)(v & 0xFFFFu)); }
MEMRA_HD float half_hi(uint32_t v) { return wq::ld_half_bits((uint16_t)(v >> 16)); }
MEMRA_HD float fsub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
using wq::fadd_rn;
using wq::fmul_rn;

MEMRA_HD int dot4(uint4 w, int4 x, int acc) {
  acc = wq::dp4a((int)w.x, x.x, acc);
  acc = wq::dp4a((int)w.y, x.y, acc);
  acc = wq::dp4a((int)w.z, x.z, acc);
  return wq::dp4a((int)w.w, x.w, acc);
}
// dot4 with the weight bytes unsigned (0 .. 255) and the activation bytes signed: dp4a.u32.s32.
MEMRA_HD int dp4a_us(uint32_t a, int b, int c) {
#ifdef __CUDA_ARCH__
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  for (int i = 0; i < 4; ++i) c += (int)(uint8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
  return c;
#endif
}
MEMRA_HD int dot4_us(uint4 w, int4 x, int acc) {
  acc = dp4a_us(w.x, x.x, acc);
  acc = dp4a_us(w.y, x.y, acc);
  acc = dp4a_us(w.z, x.z, acc);
  return dp4a_us(w.w, x.w, acc);
}
MEMRA_HD uint4 mask4(uint4 v, int shift, uint32_t m) {
  return make_uint4((v.x >> shift) & m, (v.y >> shift) & m, (v.z >> shift) & m, (v.w >> shift) & m);
}
// dot4 of a granule's 16 quants with 16 copies of the byte b: b x (their sum), exactly.
// Quant offsets are taken off the integer sum with it (dot4(q, x) - dot4b(b, x) = dot4(q - b, x)
// as integers, the same value as a byte-wise subtract first: one dp4a per word for the three
// instructions of vsub4's byte-wise emulation on sm_90; 1.077x the Q6_K output head, 1.045x
// qwen3-8b q4_0 tg128: bench/notes/mmvs-offset-dp4a.md).
MEMRA_HD int dot4b(uint32_t b, int4 x, int acc) { return dot4(make_uint4(b, b, b, b), x, acc); }

// Where dot() reads its activation row: q16(u) = the 16 quants of granule u (elements 16u ..
// 16u + 15), ds4(i) = xds pairs i and i + 1 (i even). GX: the plain q8s order (xq byte e at e).
// GXI: the interleaved q8s order (MmvsParams::act_il, q8s_order.h): granule c of task 32 g + l at
// byte 2048 g + 512 c + 16 l, so a warp's load of granule c of its 32 tasks is one contiguous
// 512-byte run. Same values either way, so the same bits.
// q16t(t, c) = q16(4 t + c): granule c of task t, written so that a task's four granules are one
// base address plus constant offsets in both orders. q16q6(t, qd) = granule qd of Q6_K task t
// (q16(16 (t >> 2) + 8 ((t >> 1) & 1) + (t & 1) + 2 qd)). GXQ6: the Q6_K variant of the interleaved
// order (MmvsParams::act_il_q6k, q8s_order.h), read by Q6_K tasks only.
MEMRA_HD int q6k_granule(int t, int qd) { return 16 * (t >> 2) + 8 * ((t >> 1) & 1) + (t & 1) + 2 * qd; }
// Byte of granule c of task t in the interleaved order: one base per task plus 512 c.
MEMRA_HD int il_task_byte(int t, int c) { return (2048 * (t >> 5) + 16 * (t & 31)) + 512 * c; }
struct GX {
  const int8_t* xq;
  const float2* xds;
  MEMRA_HD int4 q16(int u) const { return ldx16(xq + 16 * u); }
  MEMRA_HD int4 q16t(int t, int c) const { return ldx16(xq + 64 * t + 16 * c); }
  MEMRA_HD int4 q16q6(int t, int qd) const { return q16(q6k_granule(t, qd)); }
  MEMRA_HD float4 ds4(int i) const { return ldds16(xds + i); }
};
struct GXI {
  const int8_t* xq;
  const float2* xds;
  MEMRA_HD int4 q16(int u) const { return ldx16(xq + q8s::il_granule(u)); }
  MEMRA_HD int4 q16t(int t, int c) const { return ldx16(xq + il_task_byte(t, c)); }
  MEMRA_HD int4 q16q6(int t, int qd) const { return q16(q6k_granule(t, qd)); }
  MEMRA_HD float4 ds4(int i) const { return ldds16(xds + i); }
};
struct GXQ6 {
  const int8_t* xq;
  const float2* xds;
  // Only Q6_K tasks read this order (no q16 / q16t: another task type does not compile with it).
  // q6k_perm(q6k_granule(t, qd)) = 4 t + qd: granule qd of task t in the interleaved order.
  MEMRA_HD int4 q16q6(int t, int qd) const { return ldx16(xq + il_task_byte(t, qd)); }
  MEMRA_HD float4 ds4(int i) const { return ldds16(xds + i); }
};

struct Geo {
  size_t body_row_bytes;
  int64_t blocks_per_row;
  int64_t n_tasks;  // per row (k / 64)
  bool il;          // interleaved body order (split_layout.h), else blocked
};

// Warps of the 4-warp CTA that serve one row: rows longer than 64 tasks (4096 weights) split
// their task groups over 2 (up to 128 tasks) or 4 warps, so each lane has about one memory round
// trip of two tasks in flight instead of three or more in a row. A function of the type and row
// length only (and the switch), so a row's bits do not depend on m. split = false: always 1.
// Not for Q4_0, where it measured slower end to end (qwen3-8b q4_0 tg128 328.8 split vs 339.0
// one warp per row, against 1.030x q4_k_m and 1.063x q8_0 in the same run, bench/notes/mmvs.md).
// max_warps (2 or 4) caps it for rows over 128 tasks (kernels.mmvs_split_max_warps); rows of fewer
// than min_tasks tasks (at least 65; kernels.mmvs_split_min_k / 64) stay on one warp.
MEMRA_HD int warps_per_row(QType type, int64_t n_tasks, bool split, int max_warps = 4, int64_t min_tasks = 65) {
  if (!split || type == QType::Q4_0 || n_tasks <= 64 || n_tasks < min_tasks) return 1;
  return n_tasks <= 128 || max_warps < 4 ? 2 : 4;
}

// One matrix's planes: body, d plane (Q4_0/Q8_0/Q6_K), aux plane (interleaved Q4_K/Q6_K).
struct Src {
  const uint8_t* w;
  const uint8_t* d;
  const uint8_t* aux;
};

// Interleaved order (sp::il_chunk, computed here on its own; the CPU replay checks that the two
// agree): chunk 0 of task t in its row's body, and the distance between its chunks.
struct IlAt {
  const uint8_t* c0;
  size_t step;
};
template <int C>
MEMRA_HD IlAt il_at(const Src& s, int64_t row, int t, const Geo& g) {
  const int64_t g0 = t & ~31;
  const int64_t n = g.n_tasks - g0 < 32 ? g.n_tasks - g0 : 32;
  return {s.w + (size_t)row * g.body_row_bytes + 16 * (size_t)(g0 * C + (t & 31)), 16 * (size_t)n};
}

// One task = 64 weights of a row. load() issues the loads, dot() is the contribution of the task
// against one activation row (xq, xds = that row's q8s planes).
template <QType T>
struct Task;

// The dot of a Q4_K / Q5_K task (64 weights: sub-blocks 2 j and 2 j + 1 of a superblock, j = t & 3)
// from its 16-byte header h, its qs granules q0, q1 and vals(q, shift, w0): the four unsigned quant
// words of granule q's low (shift 0) or high (shift 4) nibbles, w0 = the granule's first qs word in
// the task (0 or 4). q0 = qs bytes 32 j .. 32 j + 15: low nibbles elements 0..15, high 32..47;
// q1: 16..31 / 48..63. y = d sc q - dmin m (ggml dequantize_row_q4_K / q5_K): the exact integer sums
// per sub-block, then the scale and min products against the activation's d and quant sum.
// HI16 (Q4_K): the high-nibble sum sb from the nibbles left in place (q & 0xF0 per byte, 16 q: unsigned
// bytes, dp4a.u32.s32) and shifted down once, sb = (sum of 16 q x) >> 4: the same integer (exact: |16 sb|
// < 2^20), without the four shifts per granule; vals is then only asked for the low nibbles.
template <bool HI16 = false, class X, class Vals>
MEMRA_HD float k_quant_dot(const uint4& h, const uint4& q0, const uint4& q1, int t, const X& x, Vals vals) {
  const int j = t & 3;
  // 6-bit scales/mins of sub-blocks 2j, 2j+1 (ggml get_scale_min_k4), four per word.
  const uint32_t scw = j < 2 ? (h.y & 0x3F3F3F3Fu) : ((h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u));
  const uint32_t mnw = j < 2 ? (h.z & 0x3F3F3F3Fu) : (((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u));
  const int sh = 16 * (j & 1);
  const float d = half_lo(h.x), dmin = half_hi(h.x);
  const float dsa = fmul_rn(d, (float)((scw >> sh) & 0xFFu));
  const float dsb = fmul_rn(d, (float)((scw >> (sh + 8)) & 0xFFu));
  const float dma = fmul_rn(dmin, (float)((mnw >> sh) & 0xFFu));
  const float dmb = fmul_rn(dmin, (float)((mnw >> (sh + 8)) & 0xFFu));
  const int4 x0 = x.q16t(t, 0), x1 = x.q16t(t, 1), x2 = x.q16t(t, 2), x3 = x.q16t(t, 3);
  const float4 ds = x.ds4(2 * t);
  const int sa = dot4(vals(q1, 0, 4), x1, dot4(vals(q0, 0, 0), x0, 0));
  int sb;
  if constexpr (HI16)
    sb = dot4_us(mask4(q1, 0, 0xF0F0F0F0u), x3, dot4_us(mask4(q0, 0, 0xF0F0F0F0u), x2, 0)) >> 4;
  else
    sb = dot4(vals(q1, 4, 4), x3, dot4(vals(q0, 4, 0), x2, 0));
  const float ra = fmul_rn(ds.x, fsub_rn(fmul_rn(dsa, (float)sa), fmul_rn(dma, ds.y)));
  const float rb = fmul_rn(ds.z, fsub_rn(fmul_rn(dsb, (float)sb), fmul_rn(dmb, ds.w)));
  return fadd_rn(ra, rb);
}

template <>
struct Task<QType::Q4_K> {
  uint4 h, q0, q1;
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    if (g.il) {
      const IlAt at = il_at<2>(s, row, t, g);
      h = ldw16(s.aux + ((size_t)row * (size_t)g.blocks_per_row + (size_t)(t >> 2)) * 16);
      q0 = ldw16(at.c0);
      q1 = ldw16(at.c0 + at.step);
      return;
    }
    const uint8_t* sb = s.w + (size_t)row * g.body_row_bytes + (size_t)(t >> 2) * 144;
    const int j = t & 3;
    h = ldw16(sb);
    q0 = ldw16(sb + 16 + 32 * j);
    q1 = ldw16(sb + 32 + 32 * j);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    return k_quant_dot<true>(h, q0, q1, t, x, [](uint4 q, int shift, int) { return mask4(q, shift, 0x0F0F0F0Fu); });
  }
};

// The two 16-byte qs granules of task t where a superblock's body is its 128 qs bytes (Q5_K, IQ4_XS),
// in either body order.
MEMRA_HD void load_qs128(const Src& s, int64_t row, int t, const Geo& g, uint4& q0, uint4& q1) {
  if (g.il) {
    const IlAt at = il_at<2>(s, row, t, g);
    q0 = ldw16(at.c0);
    q1 = ldw16(at.c0 + at.step);
    return;
  }
  const uint8_t* b = s.w + (size_t)row * g.body_row_bytes + (size_t)(t >> 2) * 128 + 32 * (size_t)(t & 3);
  q0 = ldw16(b);
  q1 = ldw16(b + 16);
}

// The fifth bits of Q5_K qs word w (0 .. 7) at bit 4 of each byte, from the task's u32 of them
// (split_layout.h q5k_hi_words: element 4 w + b's bit at 8 b + w).
MEMRA_HD uint32_t q5k_hi(uint32_t h, int w) { return (w <= 4 ? h << (4 - w) : h >> (w - 4)) & 0x10101010u; }
MEMRA_HD uint4 q5k_vals(uint4 q, int shift, uint32_t h, int w0) {
  return make_uint4(((q.x >> shift) & 0x0F0F0F0Fu) | q5k_hi(h, w0), ((q.y >> shift) & 0x0F0F0F0Fu) | q5k_hi(h, w0 + 1),
                    ((q.z >> shift) & 0x0F0F0F0Fu) | q5k_hi(h, w0 + 2), ((q.w >> shift) & 0x0F0F0F0Fu) | q5k_hi(h, w0 + 3));
}

// Q5_K: Q4_K's task with a fifth bit per weight. The header and the task's 8 bytes of high bits
// come from the 48-byte aux entry of its superblock (split_layout.h), the qs granules from the
// body (either order). The unsigned 5-bit q (0 .. 31) goes into the same dp4a sums and the same
// scale / min products as Q4_K's 4-bit one (k_quant_dot).
template <>
struct Task<QType::Q5_K> {
  uint4 h, q0, q1;
  uint2 hb;  // the high bits of elements 0 .. 31 (x) and 32 .. 63 (y)
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    const uint8_t* e = s.aux + ((size_t)row * (size_t)g.blocks_per_row + (size_t)(t >> 2)) * 48;
    h = ldw16(e);
    hb = ldw8(e + 16 + 8 * (t & 3));
    load_qs128(s, row, t, g, q0, q1);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    return k_quant_dot(h, q0, q1, t, x, [this](uint4 q, int shift, int w0) { return q5k_vals(q, shift, shift ? hb.y : hb.x, w0); });
  }
};

// The IQ4 codebook bytes of four 4-bit indices in the low 16 bits of s (index i at bits 4 i ..
// 4 i + 3): entries 0..7 and 8..15 looked up with the low three bits, then each byte taken from
// the second lookup where the index's bit 3 is set (selector 4 + i instead of i).
MEMRA_HD uint32_t iq4_nib4(uint32_t s) {
  const uint32_t s7 = s & 0x7777u;
  const uint32_t lo = wq::byte_perm(wq::iq4_word(0), wq::iq4_word(4), s7);
  const uint32_t hi = wq::byte_perm(wq::iq4_word(8), wq::iq4_word(12), s7);
  return wq::byte_perm(lo, hi, 0x3210u | ((s >> 1) & 0x4444u));
}
// The codebook values of the 16 elements in two re-laid qs words (split_layout.h iq4xs_task_nibbles).
MEMRA_HD uint4 iq4_vals(uint32_t a, uint32_t b) { return make_uint4(iq4_nib4(a), iq4_nib4(a >> 16), iq4_nib4(b), iq4_nib4(b >> 16)); }

// dot4(iq4_vals(a, b), x, acc) by sign-mode permutes (wq::iq4_dot8): the same integer, ~4 fewer
// instructions per 8 weights than iq4_nib4's lookup (the element values the host emulation tests read).
MEMRA_HD int iq4_dot16(uint32_t a, uint32_t b, int4 x, int acc) {
  return wq::iq4_dot8(b, x.z, x.w, wq::iq4_dot8(a, x.x, x.y, acc));
}

// IQ4_XS: 64 weights = sub-blocks 2 j and 2 j + 1 of a superblock (j = t & 3), their 4-bit indices
// re-laid in element order (q0: elements 0 .. 31, q1: 32 .. 63) from the body, the 8-byte header
// (d, scales_h, scales_l) from the aux plane. Per sub-block: the exact integer sum of codebook value
// x activation quant (signed dp4a), times d (ls - 32) (ggml dequantize_row_iq4_xs) and the
// activation's d.
template <>
struct Task<QType::IQ4_XS> {
  uint4 q0, q1;
  uint2 h;  // x: d | scales_h << 16, y: scales_l
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    h = ldw8(s.aux + ((size_t)row * (size_t)g.blocks_per_row + (size_t)(t >> 2)) * 8);
    load_qs128(s, row, t, g, q0, q1);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    const int j = t & 3;
    const uint32_t sl = h.y >> (8 * j), sh = h.x >> (16 + 4 * j);
    const int lsa = (int)((sl & 0xFu) | ((sh & 3u) << 4)), lsb = (int)(((sl >> 4) & 0xFu) | (((sh >> 2) & 3u) << 4));
    const float d = half_lo(h.x);
    const float dla = fmul_rn(d, (float)(lsa - 32)), dlb = fmul_rn(d, (float)(lsb - 32));
    const int4 x0 = x.q16t(t, 0), x1 = x.q16t(t, 1), x2 = x.q16t(t, 2), x3 = x.q16t(t, 3);
    const float4 ds = x.ds4(2 * t);
    const int sa = iq4_dot16(q0.z, q0.w, x1, iq4_dot16(q0.x, q0.y, x0, 0));
    const int sb = iq4_dot16(q1.z, q1.w, x3, iq4_dot16(q1.x, q1.y, x2, 0));
    return fadd_rn(fmul_rn(ds.x, fmul_rn(dla, (float)sa)), fmul_rn(ds.z, fmul_rn(dlb, (float)sb)));
  }
};

template <>
struct Task<QType::Q6_K> {
  uint4 la, lb, hh;
  uint2 sc;
  uint32_t d;
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    const int64_t sbi = t >> 2;
    const int n = (t >> 1) & 1, lh = t & 1;
    const size_t blk = (size_t)row * (size_t)g.blocks_per_row + (size_t)sbi;
    d = ldw2(s.d + blk * 2);
    if (g.il) {
      const IlAt at = il_at<3>(s, row, t, g);
      la = ldw16(at.c0);
      lb = ldw16(at.c0 + at.step);
      hh = ldw16(at.c0 + 2 * at.step);
      sc = ldw8(s.aux + blk * 16 + 8 * n);
      return;
    }
    const uint8_t* b = s.w + (size_t)row * g.body_row_bytes + (size_t)sbi * 208;
    la = ldw16(b + 64 * n + 16 * lh);
    lb = ldw16(b + 64 * n + 32 + 16 * lh);
    hh = ldw16(b + 128 + 32 * n + 16 * lh);
    sc = ldw8(b + 192 + 8 * n);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    const int sbi = t >> 2, n = (t >> 1) & 1, lh = t & 1;
    // Scales of quadrants 0..3 of this half: bytes lh, lh+2, lh+4, lh+6 of the half's 8.
    const uint64_t s64 = (((uint64_t)sc.y << 32) | sc.x) >> (8 * lh);
    const float dd = half_lo(d);
    // quadrant qd's 16 elements: granule q6k_granule(t, qd) (elements 256 sbi + 128 n + 16 lh + 32 qd ..)
    const float4 dsa = x.ds4(8 * sbi + 4 * n);
    const float4 dsb = x.ds4(8 * sbi + 4 * n + 2);
    const float dx[4] = {dsa.x, dsa.z, dsb.x, dsb.z};
    // ql low/high nibbles | two qh bits: the unsigned 6-bit q (0 .. 63), the weight q - 32 (ggml
    // dequantize_row_q6_K); the 32 is taken off the integer sum below.
    const uint4 q[4] = {
        make_uint4((la.x & 0x0F0F0F0Fu) | ((hh.x << 4) & 0x30303030u), (la.y & 0x0F0F0F0Fu) | ((hh.y << 4) & 0x30303030u),
                   (la.z & 0x0F0F0F0Fu) | ((hh.z << 4) & 0x30303030u), (la.w & 0x0F0F0F0Fu) | ((hh.w << 4) & 0x30303030u)),
        make_uint4((lb.x & 0x0F0F0F0Fu) | ((hh.x << 2) & 0x30303030u), (lb.y & 0x0F0F0F0Fu) | ((hh.y << 2) & 0x30303030u),
                   (lb.z & 0x0F0F0F0Fu) | ((hh.z << 2) & 0x30303030u), (lb.w & 0x0F0F0F0Fu) | ((hh.w << 2) & 0x30303030u)),
        make_uint4(((la.x >> 4) & 0x0F0F0F0Fu) | (hh.x & 0x30303030u), ((la.y >> 4) & 0x0F0F0F0Fu) | (hh.y & 0x30303030u),
                   ((la.z >> 4) & 0x0F0F0F0Fu) | (hh.z & 0x30303030u), ((la.w >> 4) & 0x0F0F0F0Fu) | (hh.w & 0x30303030u)),
        make_uint4(((lb.x >> 4) & 0x0F0F0F0Fu) | ((hh.x >> 2) & 0x30303030u), ((lb.y >> 4) & 0x0F0F0F0Fu) | ((hh.y >> 2) & 0x30303030u),
                   ((lb.z >> 4) & 0x0F0F0F0Fu) | ((hh.z >> 2) & 0x30303030u), ((lb.w >> 4) & 0x0F0F0F0Fu) | ((hh.w >> 2) & 0x30303030u))};
    float r = 0.0f;
MEMRA_UNROLL
    for (int qd = 0; qd < 4; ++qd) {
      const int4 xv = x.q16q6(t, qd);
      const int s = dot4(q[qd], xv, 0) - dot4b(0x20202020u, xv, 0);  // sum (q - 32) x, exactly
      const float dsc = fmul_rn(dd, (float)(int8_t)(s64 >> (16 * qd)));
      r = fadd_rn(r, fmul_rn(dx[qd], fmul_rn(dsc, (float)s)));
    }
    return r;
  }
};

template <>
struct Task<QType::Q8_0> {
  uint4 q[4];
  uint32_t d;
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    d = ldw4(s.d + ((size_t)row * (size_t)g.blocks_per_row + 2 * (size_t)t) * 2);
    if (g.il) {
      const IlAt at = il_at<4>(s, row, t, g);
MEMRA_UNROLL
      for (int i = 0; i < 4; ++i) q[i] = ldw16(at.c0 + i * at.step);
      return;
    }
    const uint8_t* b = s.w + (size_t)row * g.body_row_bytes + (size_t)t * 64;
MEMRA_UNROLL
    for (int i = 0; i < 4; ++i) q[i] = ldw16(b + 16 * i);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    const int4 x0 = x.q16t(t, 0), x1 = x.q16t(t, 1), x2 = x.q16t(t, 2), x3 = x.q16t(t, 3);
    const float4 ds = x.ds4(2 * t);
    const int s0 = dot4(q[1], x1, dot4(q[0], x0, 0));
    const int s1 = dot4(q[3], x3, dot4(q[2], x2, 0));
    const float r0 = fmul_rn(fmul_rn(half_lo(d), ds.x), (float)s0);
    const float r1 = fmul_rn(fmul_rn(half_hi(d), ds.z), (float)s1);
    return fadd_rn(r0, r1);
  }
};

template <>
struct Task<QType::Q4_0> {
  uint4 q0, q1;
  uint32_t d;
  MEMRA_HD void load(const Src& s, int64_t row, int t, const Geo& g) {
    d = ldw4(s.d + ((size_t)row * (size_t)g.blocks_per_row + 2 * (size_t)t) * 2);
    if (g.il) {
      const IlAt at = il_at<2>(s, row, t, g);
      q0 = ldw16(at.c0);
      q1 = ldw16(at.c0 + at.step);
      return;
    }
    const uint8_t* b = s.w + (size_t)row * g.body_row_bytes + (size_t)t * 32;
    q0 = ldw16(b);
    q1 = ldw16(b + 16);
  }
  MEMRA_HD float dot(int t, const int8_t* xq, const float2* xds) const { return dot(t, GX{xq, xds}); }
  template <class X>
  MEMRA_HD float dot(int t, const X& x) const {
    const int4 x0 = x.q16t(t, 0), x1 = x.q16t(t, 1), x2 = x.q16t(t, 2), x3 = x.q16t(t, 3);
    const float4 ds = x.ds4(2 * t);
    // Block qs: low nibbles elements 0..15, high 16..31; sum (q - 8) x, exactly.
    const int s0 = dot4(mask4(q0, 4, 0x0F0F0F0Fu), x1, dot4(mask4(q0, 0, 0x0F0F0F0Fu), x0, 0)) -
                   dot4b(0x08080808u, x1, dot4b(0x08080808u, x0, 0));
    const int s1 = dot4(mask4(q1, 4, 0x0F0F0F0Fu), x3, dot4(mask4(q1, 0, 0x0F0F0F0Fu), x2, 0)) -
                   dot4b(0x08080808u, x3, dot4b(0x08080808u, x2, 0));
    const float r0 = fmul_rn(fmul_rn(half_lo(d), ds.x), (float)s0);
    const float r1 = fmul_rn(fmul_rn(half_hi(d), ds.z), (float)s1);
    return fadd_rn(r0, r1);
  }
};

}  // namespace memra::cuda::mmvs
