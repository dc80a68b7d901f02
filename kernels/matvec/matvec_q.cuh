#pragma once
// The dp4a matvec for one weight type; instantiated per type in matvec_q_*.cu.
#include <cuda_fp16.h>

#include "matvec/matvec.h"
#include "matvec/matvec_route.cuh"
#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {

template <QType T, int MMAX, bool ROUTED = false>
__global__ void matvec_q8_1_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_rows,
                                   int n_chunks, const uint8_t* __restrict__ x, int m,
                                   float* __restrict__ y, int64_t ldy, MatvecRoute route = {}) {
  using Tr = wq::WTraits<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  const size_t x_row_bytes = (size_t)n_chunks * sizeof(BlockQ8_1);
  if constexpr (ROUTED) {
    const MatvecRouteSlot rs = matvec_route_slot(route, x_row_bytes, y, ldy, row, lane);
    if (!rs.ok) return;
    if (rs.second) w = route.w2, y = route.y2;
    w += rs.w_off, x += rs.x_off, y += rs.y_off;
  }
  const uint8_t* wr = w + row * row_bytes;
  float acc[MMAX];
#pragma unroll
  for (int j = 0; j < MMAX; ++j) acc[j] = 0.f;

  // Lane l takes chunks l, l+32, ...: neighbouring lanes read neighbouring bytes of the row.
  for (int c = lane; c < n_chunks; c += 32) {
    wq::Chunk ch;
    Tr::decode(wr + (size_t)(c / Tr::kSubs) * Tr::kBytes, c % Tr::kSubs, ch);
#pragma unroll
    for (int j = 0; j < MMAX; ++j)
      if (j < m) acc[j] += wq::chunk_dot_q8_1<T>(ch, x + j * x_row_bytes + (size_t)c * sizeof(BlockQ8_1));
  }
#pragma unroll
  for (int j = 0; j < MMAX; ++j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < MMAX; ++j)
      if (j < m) y[j * ldy + row] = acc[j];
  }
}

// MatvecParams::groups: blockIdx.y is the group [expert, slot 0 .. 7] (moe_kernels.h layout, stride
// 9); each warp one row of the group's expert for all of its slots, the m = 1 routed form's per-slot
// arithmetic (lane l: chunks l, l + 32, ... in increasing order, then the xor tree).
template <QType T>
__global__ void matvec_q8_1_grouped_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_rows,
                                           int n_chunks, const uint8_t* __restrict__ x, float* __restrict__ y,
                                           int64_t ldy, const int32_t* __restrict__ groups, int n_experts,
                                           size_t expert_bytes, int x_slot_div) {
  using Tr = wq::WTraits<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  const MatvecGroup grp = matvec_group(groups);
  const int e = grp.e, m = grp.m;
  const int(&slot)[8] = grp.slot;
  if (e < 0) return;
  if (e >= n_experts) {  // the out-of-range ids' group: NaN rows, no read
    if (lane == 0)
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (j < m) y[(int64_t)slot[j] * ldy + row] = __int_as_float(0x7fc00000);
    return;
  }
  const size_t x_row_bytes = (size_t)n_chunks * sizeof(BlockQ8_1);
  const uint8_t* xs[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) xs[j] = x + (size_t)((j < m ? slot[j] : slot[0]) / x_slot_div) * x_row_bytes;
  const uint8_t* wr = w + (size_t)e * expert_bytes + row * row_bytes;
  float acc[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) acc[j] = 0.f;
  for (int c = lane; c < n_chunks; c += 32) {
    wq::Chunk ch;
    Tr::decode(wr + (size_t)(c / Tr::kSubs) * Tr::kBytes, c % Tr::kSubs, ch);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < m) acc[j] += wq::chunk_dot_q8_1<T>(ch, xs[j] + (size_t)c * sizeof(BlockQ8_1));
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (j < m) y[(int64_t)slot[j] * ldy + row] = acc[j];
  }
}

template <QType T, int MMAX>
cudaError_t launch_matvec_q8_1_m(const MatvecParams& p, size_t row_bytes, int64_t ldy, cudaStream_t s) {
  const int rpb = p.rows_per_block;
  const int64_t grid = (p.n_rows + rpb - 1) / rpb;
  const auto* w = static_cast<const uint8_t*>(p.w);
  const auto* x = static_cast<const uint8_t*>(p.x_q8_1);
  if constexpr (MMAX == 1) {
    if (p.ids) {
      const MatvecRoute r{p.ids, p.n_experts, p.expert_bytes, p.x_slot_div, static_cast<const uint8_t*>(p.w2), p.y2,
                          p.n_slots};
      const unsigned slots = (unsigned)p.n_slots * (p.w2 ? 2u : 1u);
      matvec_q8_1_kernel<T, 1, true><<<dim3((unsigned)grid, slots), 32 * rpb, 0, s>>>(
          w, row_bytes, p.n_rows, (int)(p.n_cols / 32), x, 1, p.y, ldy, r);
      return cudaGetLastError();
    }
  }
  matvec_q8_1_kernel<T, MMAX><<<(unsigned)grid, 32 * rpb, 0, s>>>(w, row_bytes, p.n_rows, (int)(p.n_cols / 32),
                                                                   x, p.m, p.y, ldy);
  return cudaGetLastError();
}

// MMAX instances: each m runs the smallest instance >= m (the extra activation rows are masked).
// The reduced CI set keeps only MMAX = 8, which is correct for every m (just slower at m = 1).
template <QType T>
cudaError_t launch_matvec_q8_1(const MatvecParams& p, size_t row_bytes, int64_t ldy, cudaStream_t s) {
  if (p.groups) {  // the grouped routed form
    const int rpb = p.rows_per_block;
    const dim3 g((unsigned)((p.n_rows + rpb - 1) / rpb), (unsigned)p.n_groups);
    matvec_q8_1_grouped_kernel<T><<<g, 32 * rpb, 0, s>>>(
        static_cast<const uint8_t*>(p.w), row_bytes, p.n_rows, (int)(p.n_cols / 32),
        static_cast<const uint8_t*>(p.x_q8_1), p.y, ldy, p.groups, p.n_experts, p.expert_bytes, p.x_slot_div);
    return cudaGetLastError();
  }
  if (p.ids) return launch_matvec_q8_1_m<T, 1>(p, row_bytes, ldy, s);  // the routed form: m = 1
#ifndef MEMRA_REDUCED_INSTANCES
  if (p.m == 1) return launch_matvec_q8_1_m<T, 1>(p, row_bytes, ldy, s);
  if (p.m == 2) return launch_matvec_q8_1_m<T, 2>(p, row_bytes, ldy, s);
  if (p.m <= 4) return launch_matvec_q8_1_m<T, 4>(p, row_bytes, ldy, s);
#endif
  return launch_matvec_q8_1_m<T, 8>(p, row_bytes, ldy, s);
}

}  // namespace memra::cuda

#define MEMRA_INSTANTIATE_MATVEC_Q(N)                                                             \
  template cudaError_t memra::cuda::launch_matvec_q8_1<memra::QType::N>(                         \
      const memra::cuda::MatvecParams&, size_t, int64_t, cudaStream_t);
