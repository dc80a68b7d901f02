// launch_matvec_grouped_mma (matvec.h): the grouped routed matvec of Q8_0 experts on the int8
// tensor cores. Per 32-weight block, mma.sync m16n8k32 (s8 x s8 -> s32) gives 16 rows x 8 slots
// of exact integer dot products (a group holds at most 8 slots: the MMA's N), each then scaled as
// the dp4a form scales it (dx * (d_w * (float)sum)) and added to an f32 accumulator in increasing
// block order: another summation order than the dp4a form's lane tree (another numeric class,
// gated against f64 with a tolerance in kernel-check moe grouped_mma/*).
#include <cuda_fp16.h>

#include <cstdint>

#include "matvec/matvec.h"
#include "matvec/matvec_route.cuh"
#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {
namespace {

constexpr int kWarps = 4;        // per CTA; each warp 16 rows of one group
constexpr int kQ8Bytes = 34;     // a Q8_0 block: f16 d + 32 int8
constexpr int kXBytes = 36;      // a q8_1 block: f16 d, f16 s, 32 int8

__device__ __forceinline__ void mma_s8_16x8x32(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// grid (ceil(n_rows / 64), n_groups); warp w of block x serves rows 64 x + 16 w .. + 15 of the group's
// expert. Fragment roles (PTX m16n8k32 .s8): lane = 4 g + t; A rows g and g + 8, k 4t..4t+3 and
// +16; B column (slot) g, k 4t..4t+3 and +16; C rows g, g + 8, columns (slots) 2t, 2t + 1.
__global__ void __launch_bounds__(kWarps * 32) grouped_mma_q8_0_kernel(
    const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_rows, int n_blocks, const uint8_t* __restrict__ x,
    float* __restrict__ y, int64_t ldy, const int32_t* __restrict__ groups, int n_experts, size_t expert_bytes,
    int x_slot_div) {
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
  if (e >= n_experts) {  // the out-of-range ids' group: NaN rows, no read
    const float nan = __int_as_float(0x7fc00000);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int sj = j ? s1 : s0;
      if (sj >= m) continue;
      if (ra < n_rows) y[(int64_t)slot[sj] * ldy + ra] = nan;
      if (rb < n_rows) y[(int64_t)slot[sj] * ldy + rb] = nan;
    }
    return;
  }
  const size_t x_row = (size_t)n_blocks * kXBytes;
  const auto x_of = [&](int j) { return x + (size_t)(slot[j < m ? j : 0] / x_slot_div) * x_row; };
  const uint8_t* xbq = x_of(gq);           // B: this lane's slot column
  const uint8_t* xc0 = x_of(s0);           // C: the scales of this lane's two slot columns
  const uint8_t* xc1 = x_of(s1);
  const bool bq_ok = gq < m;
  const uint8_t* wexp = w + (size_t)e * expert_bytes;
  const uint8_t* wa = wexp + (size_t)(ra < n_rows ? ra : n_rows - 1) * row_bytes;
  const uint8_t* wb = wexp + (size_t)(rb < n_rows ? rb : n_rows - 1) * row_bytes;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const int kq = 4 * tq;
#pragma unroll 4
  for (int b = 0; b < n_blocks; ++b) {
    const uint8_t* ba = wa + (size_t)b * kQ8Bytes;
    const uint8_t* bb = wb + (size_t)b * kQ8Bytes;
    const uint32_t a[4] = {wq::ld_u32_a2(ba + 2 + kq), wq::ld_u32_a2(bb + 2 + kq), wq::ld_u32_a2(ba + 18 + kq),
                           wq::ld_u32_a2(bb + 18 + kq)};
    const uint8_t* xq = xbq + (size_t)b * kXBytes;
    const uint32_t b0 = bq_ok ? wq::ld_u32_a4(xq + 4 + kq) : 0u, b1 = bq_ok ? wq::ld_u32_a4(xq + 20 + kq) : 0u;
    int c[4] = {0, 0, 0, 0};
    mma_s8_16x8x32(c, a, b0, b1);
    const float da = wq::ld_half(ba), db = wq::ld_half(bb);
    const float dx0 = wq::ld_half(xc0 + (size_t)b * kXBytes), dx1 = wq::ld_half(xc1 + (size_t)b * kXBytes);
    acc[0] += dx0 * (da * (float)c[0]);
    acc[1] += dx1 * (da * (float)c[1]);
    acc[2] += dx0 * (db * (float)c[2]);
    acc[3] += dx1 * (db * (float)c[3]);
  }
  if (s0 < m) {
    if (ra < n_rows) y[(int64_t)slot[s0] * ldy + ra] = acc[0];
    if (rb < n_rows) y[(int64_t)slot[s0] * ldy + rb] = acc[2];
  }
  if (s1 < m) {
    if (ra < n_rows) y[(int64_t)slot[s1] * ldy + ra] = acc[1];
    if (rb < n_rows) y[(int64_t)slot[s1] * ldy + rb] = acc[3];
  }
}

}  // namespace

cudaError_t launch_matvec_grouped_mma(const MatvecParams& p, cudaStream_t stream) {
  if (p.w_type != QType::Q8_0) return cudaErrorNotSupported;
  if (!p.w || !p.y || !p.x_q8_1 || !p.groups || p.ids || p.n_rows <= 0 || p.n_cols <= 0 || p.n_cols % 32 ||
      p.n_groups < 1 || p.n_groups > 65535 || p.n_experts < 1 || p.x_slot_div < 1)
    return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.n_cols / 32) * kQ8Bytes;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : dense;
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  if (rb < dense || rb % 2 || p.expert_bytes < (size_t)p.n_rows * rb || p.expert_bytes % 2 || ldy < p.n_rows ||
      reinterpret_cast<uintptr_t>(p.w) % 2 || reinterpret_cast<uintptr_t>(p.x_q8_1) % 4)
    return cudaErrorInvalidValue;
  const int64_t rows_per_cta = 16 * kWarps;
  const dim3 grid((unsigned)((p.n_rows + rows_per_cta - 1) / rows_per_cta), (unsigned)p.n_groups);
  grouped_mma_q8_0_kernel<<<grid, kWarps * 32, 0, stream>>>(
      static_cast<const uint8_t*>(p.w), rb, p.n_rows, (int)(p.n_cols / 32), static_cast<const uint8_t*>(p.x_q8_1),
      p.y, ldy, p.groups, p.n_experts, p.expert_bytes, p.x_slot_div);
  return cudaGetLastError();
}

}  // namespace memra::cuda
