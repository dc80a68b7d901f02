// launch_matvec_grouped_mma (matvec.h): the grouped routed matvec on the int8 tensor cores. Per
// 32-weight block, mma.sync m16n8k32 (s8 x s8 -> s32) gives 16 rows x 8 slots of exact integer dot
// products (a group holds at most 8 slots: the MMA's N); the types whose scale changes every 16
// weights (Q6_K) take two MMAs, one per half. The A fragment comes from the block decoder every
// quantized kernel shares (wq::WTraits<T>::decode: 32 int8 values, the scales and mins), so each
// block is scaled exactly as chunk_dot_q8_1 scales it (the same integers, the same float
// expression, the min term from the exact activation quant sums); the blocks are then summed in
// increasing order into one f32 accumulator per (row, slot): another summation order than the dp4a
// form's lane tree (another numeric class, gated against f64 with a tolerance in kernel-check moe
// grouped_mma/*).
#include <cuda_fp16.h>

#include <cstdint>

#include "matvec/matvec.h"
#include "matvec/matvec_route.cuh"
#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {
namespace {

constexpr int kWarps = 4;     // per CTA; each warp 16 rows of one group
constexpr int kXBytes = 36;  // a q8_1 block: f16 d, f16 s, 32 int8

__device__ __forceinline__ void mma_s8_16x8x32(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// chunk_dot_q8_1's scaling of one block from its integer sums: s0 / s1 the weight x activation quant
// sums over elements 0-15 / 16-31, t0 / t1 the activation quant sums.
template <QType T>
__device__ __forceinline__ float block_part(const wq::Chunk& ch, int s0, int s1, int t0, int t1) {
  using Tr = wq::WTraits<T>;
  float part;
  if constexpr (Tr::kSplit16) part = ch.d[0] * (float)s0 + ch.d[1] * (float)s1;
  else part = ch.d[0] * (float)(s0 + s1);
  if constexpr (Tr::kHasMin) {
    if constexpr (Tr::kSplit16) part += ch.m[0] * (float)t0 + ch.m[1] * (float)t1;
    else part += ch.m[0] * (float)(t0 + t1);
  }
  return part;
}

// grid (ceil(n_rows / 64), n_groups); warp w of block x serves rows 64 x + 16 w .. + 15 of the group's
// expert. Fragment roles (PTX m16n8k32 .s8): lane = 4 g + t; A rows g and g + 8, k 4t..4t+3 and
// +16 (the decoded chunk's q[t] and q[4 + t]); B column (slot) g, k 4t..4t+3 and +16; C rows g,
// g + 8, columns (slots) 2t, 2t + 1.
template <QType T>
__global__ void __launch_bounds__(kWarps * 32) grouped_mma_kernel(
    const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_rows, int n_blocks, const uint8_t* __restrict__ x,
    float* __restrict__ y, int64_t ldy, const int32_t* __restrict__ groups, int n_experts, size_t expert_bytes,
    int x_slot_div) {
  using Tr = wq::WTraits<T>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gq = lane >> 2, tq = lane & 3;
  const int64_t row0 = ((int64_t)blockIdx.x * kWarps + warp) * 16;
  if (row0 >= n_rows) return;
  const MatvecGroup grp = matvec_group(groups);
  const int e = grp.e, m = grp.m;
  const int(&slot)[8] = grp.slot;
  if (e < 0) return;
  const int64_t ra = row0 + gq, rb = ra + 8;
  const int s0 = 2 * tq, s1 = 2 * tq + 1;  // this lane's C columns
  // slot j (a lane-dependent index) by selects over the unrolled array: registers, no local memory.
  const auto slot_at = [&](int j) {
    int v = slot[0];
#pragma unroll
    for (int i = 1; i < 8; ++i)
      if (i == j && i < m) v = slot[i];
    return v;
  };
  if (e >= n_experts) {  // the out-of-range ids' group: NaN rows, no read
    const float nan = __int_as_float(0x7fc00000);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int sj = j ? s1 : s0;
      if (sj >= m) continue;
      const int64_t o = (int64_t)slot_at(sj) * ldy;
      if (ra < n_rows) y[o + ra] = nan;
      if (rb < n_rows) y[o + rb] = nan;
    }
    return;
  }
  const size_t x_row = (size_t)n_blocks * kXBytes;
  const auto x_of = [&](int j) { return x + (size_t)(slot_at(j) / x_slot_div) * x_row; };
  const uint8_t* xbq = x_of(gq);  // B: this lane's slot column
  const uint8_t* xc0 = x_of(s0);  // C: the scales of this lane's two slot columns
  const uint8_t* xc1 = x_of(s1);
  const bool bq_ok = gq < m;
  const uint8_t* wexp = w + (size_t)e * expert_bytes;
  const uint8_t* wa = wexp + (size_t)(ra < n_rows ? ra : n_rows - 1) * row_bytes;
  const uint8_t* wb = wexp + (size_t)(rb < n_rows ? rb : n_rows - 1) * row_bytes;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const int kq = 4 * tq;
#pragma unroll 2
  for (int b = 0; b < n_blocks; ++b) {
    wq::Chunk ca, cb;
    Tr::decode(wa + (size_t)(b / Tr::kSubs) * Tr::kBytes, b % Tr::kSubs, ca);
    Tr::decode(wb + (size_t)(b / Tr::kSubs) * Tr::kBytes, b % Tr::kSubs, cb);
    const uint8_t* xq = xbq + (size_t)b * kXBytes;
    const uint32_t b0 = bq_ok ? wq::ld_u32_a4(xq + 4 + kq) : 0u, b1 = bq_ok ? wq::ld_u32_a4(xq + 20 + kq) : 0u;
    // The activation quant sums of this lane's slot column (halves 0-15 and 16-31), then those of
    // its two C columns (lanes 8t and 8t + 4 hold slots 2t and 2t + 1).
    int t0c0 = 0, t1c0 = 0, t0c1 = 0, t1c1 = 0;
    if constexpr (Tr::kHasMin) {
      int t0 = wq::dp4a((int)b0, 0x01010101, 0), t1 = wq::dp4a((int)b1, 0x01010101, 0);
#pragma unroll
      for (int o = 1; o <= 2; o <<= 1) {
        t0 += __shfl_xor_sync(0xffffffffu, t0, o);
        t1 += __shfl_xor_sync(0xffffffffu, t1, o);
      }
      t0c0 = __shfl_sync(0xffffffffu, t0, 8 * tq);
      t1c0 = __shfl_sync(0xffffffffu, t1, 8 * tq);
      t0c1 = __shfl_sync(0xffffffffu, t0, 8 * tq + 4);
      t1c1 = __shfl_sync(0xffffffffu, t1, 8 * tq + 4);
    }
    int lo[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
    // q[tq] and q[4 + tq] by selects (a lane-dependent index into the chunk would go to local memory).
    uint32_t qa0 = (uint32_t)ca.q[0], qb0 = (uint32_t)cb.q[0], qa1 = (uint32_t)ca.q[4], qb1 = (uint32_t)cb.q[4];
#pragma unroll
    for (int i = 1; i < 4; ++i)
      if (i == tq) {
        qa0 = (uint32_t)ca.q[i], qb0 = (uint32_t)cb.q[i];
        qa1 = (uint32_t)ca.q[4 + i], qb1 = (uint32_t)cb.q[4 + i];
      }
    if constexpr (Tr::kSplit16) {  // one MMA per 16-weight half
      mma_s8_16x8x32(lo, qa0, qb0, 0u, 0u, b0, b1);
      mma_s8_16x8x32(hi, 0u, 0u, qa1, qb1, b0, b1);
    } else {
      mma_s8_16x8x32(lo, qa0, qb0, qa1, qb1, b0, b1);
    }
    const float dx0 = wq::ld_half(xc0 + (size_t)b * kXBytes), dx1 = wq::ld_half(xc1 + (size_t)b * kXBytes);
    acc[0] += dx0 * block_part<T>(ca, lo[0], hi[0], t0c0, t1c0);
    acc[1] += dx1 * block_part<T>(ca, lo[1], hi[1], t0c1, t1c1);
    acc[2] += dx0 * block_part<T>(cb, lo[2], hi[2], t0c0, t1c0);
    acc[3] += dx1 * block_part<T>(cb, lo[3], hi[3], t0c1, t1c1);
  }
  if (s0 < m) {
    const int64_t o = (int64_t)slot_at(s0) * ldy;
    if (ra < n_rows) y[o + ra] = acc[0];
    if (rb < n_rows) y[o + rb] = acc[2];
  }
  if (s1 < m) {
    const int64_t o = (int64_t)slot_at(s1) * ldy;
    if (ra < n_rows) y[o + ra] = acc[1];
    if (rb < n_rows) y[o + rb] = acc[3];
  }
}

template <QType T>
cudaError_t launch_t(const MatvecParams& p, size_t rb, int64_t ldy, cudaStream_t stream) {
  const int64_t rows_per_cta = 16 * kWarps;
  const dim3 grid((unsigned)((p.n_rows + rows_per_cta - 1) / rows_per_cta), (unsigned)p.n_groups);
  grouped_mma_kernel<T><<<grid, kWarps * 32, 0, stream>>>(
      static_cast<const uint8_t*>(p.w), rb, p.n_rows, (int)(p.n_cols / 32), static_cast<const uint8_t*>(p.x_q8_1),
      p.y, ldy, p.groups, p.n_experts, p.expert_bytes, p.x_slot_div);
  return cudaGetLastError();
}

}  // namespace

bool matvec_grouped_mma_built(QType t) {
  return t == QType::Q8_0 || t == QType::Q4_K || t == QType::Q6_K || t == QType::Q4_0 || t == QType::Q5_K ||
         t == QType::IQ4_XS;
}

cudaError_t launch_matvec_grouped_mma(const MatvecParams& p, cudaStream_t stream) {
  if (!matvec_grouped_mma_built(p.w_type)) return cudaErrorNotSupported;
  const auto& tr = qtype_traits(p.w_type);
  if (!p.w || !p.y || !p.x_q8_1 || !p.groups || p.ids || p.w2 || p.y2 || p.n_rows <= 0 || p.n_cols <= 0 || p.n_cols % 32 ||
      p.n_cols % tr.block_elems || p.n_groups < 1 || p.n_groups > 65535 || p.n_experts < 1 || p.x_slot_div < 1)
    return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.n_cols / tr.block_elems) * tr.block_bytes;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : dense;
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  // The decoders read 2-byte words of every type here (4-byte of Q4_K): rows and experts keep that.
  const size_t align = p.w_type == QType::Q4_K ? 4 : 2;
  if (rb < dense || rb % align || p.expert_bytes < (size_t)p.n_rows * rb || p.expert_bytes % align || ldy < p.n_rows ||
      reinterpret_cast<uintptr_t>(p.w) % align || reinterpret_cast<uintptr_t>(p.x_q8_1) % 4)
    return cudaErrorInvalidValue;
  switch (p.w_type) {
    case QType::Q8_0: return launch_t<QType::Q8_0>(p, rb, ldy, stream);
    case QType::Q4_K: return launch_t<QType::Q4_K>(p, rb, ldy, stream);
    case QType::Q6_K: return launch_t<QType::Q6_K>(p, rb, ldy, stream);
    case QType::Q4_0: return launch_t<QType::Q4_0>(p, rb, ldy, stream);
    case QType::Q5_K: return launch_t<QType::Q5_K>(p, rb, ldy, stream);
    case QType::IQ4_XS: return launch_t<QType::IQ4_XS>(p, rb, ldy, stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace memra::cuda
