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

template <QType T, int MMAX>
cudaError_t launch_matvec_q8_1_m(const MatvecParams& p, size_t row_bytes, int64_t ldy, cudaStream_t s) {
  const int rpb = p.rows_per_block;
  const int64_t grid = (p.n_rows + rpb - 1) / rpb;
  const auto* w = static_cast<const uint8_t*>(p.w);
  const auto* x = static_cast<const uint8_t*>(p.x_q8_1);
  if constexpr (MMAX == 1) {
    if (p.ids) {
      const MatvecRoute r{p.ids, p.n_experts, p.expert_bytes, p.x_slot_div};
      matvec_q8_1_kernel<T, 1, true><<<dim3((unsigned)grid, (unsigned)p.n_slots), 32 * rpb, 0, s>>>(
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
