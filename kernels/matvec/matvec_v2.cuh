#pragma once
// The v2 decode matvec kernel (see matvec_v2.h for the design, bench/notes/matvec-v2.md for the
// numbers behind it). The pass geometry and window arithmetic are __host__ __device__ so that
// tests/backend_cuda/test_matvec_v2_emul.cpp replays the kernel's byte path on the CPU.
#include <cstdint>

#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda::v2 {

// One pass = 128 chunks of 32 weights (4 per lane). Its bytes are a multiple of 16 for the v2
// types (Q4_K 2304, Q6_K 3360, Q8_0 4352, Q4_0 2304), so consecutive passes of a row start at the
// same offset mod 16; a row that starts unaligned needs one extra granule per pass.
template <QType T>
struct Geom {
  using Tr = wq::WTraits<T>;
  static constexpr int kChunksPerLane = 4;
  static constexpr int kPassChunks = 32 * kChunksPerLane;
  static_assert(kPassChunks % Tr::kSubs == 0, "a pass holds whole blocks");
  static constexpr int kPassBytes = kPassChunks / Tr::kSubs * Tr::kBytes;
  static_assert(kPassBytes % 16 == 0, "a pass is a whole number of 16-byte granules");
  static constexpr int kBufGranules = kPassBytes / 16 + 1;  // + 1 for an unaligned row start
  static constexpr int kLoadsPerLane = (kBufGranules + 31) / 32;
};

// The window of one pass: bytes [start, start + len) of the row, fetched as n_gran aligned
// granules from start - delta; len < kPassBytes only in the last pass of a row.
template <QType T>
MEMRA_HD int pass_len(int pass, int row_data_bytes) {
  const int rest = row_data_bytes - pass * Geom<T>::kPassBytes;
  return rest < Geom<T>::kPassBytes ? rest : Geom<T>::kPassBytes;
}
MEMRA_HD int window_delta(const uint8_t* start) { return (int)(reinterpret_cast<uintptr_t>(start) & 15); }
MEMRA_HD int window_granules(int delta, int len) { return (delta + len + 15) / 16; }

}  // namespace memra::cuda::v2

#ifdef __CUDACC__
#include <cuda_fp16.h>

#include "matvec/matvec_route.cuh"
#include "matvec/matvec_v2.h"

namespace memra::cuda::v2 {

// Granule g of the window is the 16 bytes at base + 16 g (base 16-byte aligned). Only a granule
// that sticks out of the weight allocation [lo, hi) (first or last row of an unaligned matrix) is
// assembled from single bytes, with zeros outside: those bytes are never decoded.
__device__ __forceinline__ uint4 load_granule(const uint8_t* p, const uint8_t* lo, const uint8_t* hi) {
  if (p >= lo && p + 16 <= hi) return __ldg(reinterpret_cast<const uint4*>(p));
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i)
    if (p + i >= lo && p + i < hi) w[i / 4] |= (uint32_t)p[i] << (8 * (i % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <QType T>
__device__ __forceinline__ void issue_pass(const uint8_t* start, int len, const uint8_t* lo, const uint8_t* hi,
                                           int lane, uint4 (&v)[Geom<T>::kLoadsPerLane]) {
  const int delta = window_delta(start);
  const uint8_t* base = start - delta;
  const int n_gran = window_granules(delta, len);
#pragma unroll
  for (int k = 0; k < Geom<T>::kLoadsPerLane; ++k) {
    const int g = lane + 32 * k;
    if (g < n_gran) v[k] = load_granule(base + 16 * g, lo, hi);
  }
}

// Dynamic shared memory: [x copy, rounded up to 16 B, when x_in_smem][one window per warp].
// ROUTED (MatvecParams::ids, the MoE decode path): blockIdx.y is the slot; its expert's matrix, its
// activation row and its output row as the v1 routed form (matvec_route.cuh), the slot's id read
// once per block (block-uniform, so a bad id returns the whole block before the barrier); w_lo /
// w_hi bound the whole stack of experts.
template <QType T, bool ROUTED = false>
__global__ void __launch_bounds__(256) matvec_v2_kernel(const uint8_t* __restrict__ w, size_t row_bytes,
                                                        int64_t n_rows, int n_chunks,
                                                        const uint8_t* __restrict__ x_g, int x_smem_bytes,
                                                        float* __restrict__ y, const uint8_t* w_lo,
                                                        const uint8_t* w_hi, int64_t ldy = 0,
                                                        MatvecRoute route = {}) {
  using G = Geom<T>;
  using Tr = typename G::Tr;
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int x_bytes = n_chunks * (int)sizeof(BlockQ8_1);
  if constexpr (ROUTED) {
    const int64_t r0 = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp;
    const MatvecRouteSlot rs = matvec_route_slot(route, (size_t)x_bytes, y, ldy, r0 < n_rows ? r0 : n_rows - 1, lane);
    if (!rs.ok) return;  // block-uniform (one slot per block); NaN rows written by each warp's lane 0
    w += rs.w_off, x_g += rs.x_off, y += rs.y_off;
  }
  const uint8_t* x = x_g;
  if (x_smem_bytes > 0) {
    // q8_1 blocks are 36 B, so only 4-byte alignment is guaranteed; the copy is L2-resident.
    auto* xs = reinterpret_cast<uint32_t*>(smem);
    const auto* xg = reinterpret_cast<const uint32_t*>(x_g);
    for (int i = threadIdx.x; i < x_bytes / 4; i += blockDim.x) xs[i] = __ldg(xg + i);
    __syncthreads();
    x = reinterpret_cast<const uint8_t*>(smem);
  }
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp;
  if (row >= n_rows) return;  // no block-wide barrier below this point
  uint4* buf = reinterpret_cast<uint4*>(reinterpret_cast<uint8_t*>(smem) + x_smem_bytes) + warp * G::kBufGranules;

  const uint8_t* wr = w + row * row_bytes;
  const int row_data = n_chunks / Tr::kSubs * Tr::kBytes;
  const int n_pass = (n_chunks + G::kPassChunks - 1) / G::kPassChunks;
  const int delta = window_delta(wr);  // the same for every pass: kPassBytes % 16 == 0
  uint4 v[G::kLoadsPerLane];
  issue_pass<T>(wr, pass_len<T>(0, row_data), w_lo, w_hi, lane, v);
  float acc = 0.f;
  for (int pass = 0; pass < n_pass; ++pass) {
    const int n_gran = window_granules(delta, pass_len<T>(pass, row_data));
#pragma unroll
    for (int k = 0; k < G::kLoadsPerLane; ++k)
      if (lane + 32 * k < n_gran) buf[lane + 32 * k] = v[k];
    __syncwarp();
    if (pass + 1 < n_pass) {
      issue_pass<T>(wr + (pass + 1) * G::kPassBytes, pass_len<T>(pass + 1, row_data), w_lo, w_hi, lane, v);
    }
    // Lane l decodes chunks l, l+32, l+64, l+96 of the pass: over the row, chunks l, l+32, ...
    // in increasing order, exactly v1's per-lane order.
    const uint8_t* win = reinterpret_cast<const uint8_t*>(buf) + delta;
    const int c0 = pass * G::kPassChunks;
    const int nc = min(G::kPassChunks, n_chunks - c0);
#pragma unroll
    for (int i = 0; i < G::kChunksPerLane; ++i) {
      const int c = lane + 32 * i;
      if (c < nc) {
        wq::Chunk ch;
        Tr::decode(win + (c / Tr::kSubs) * Tr::kBytes, c % Tr::kSubs, ch);
        acc += wq::chunk_dot_q8_1<T>(ch, x + (size_t)(c0 + c) * sizeof(BlockQ8_1));
      }
    }
    __syncwarp();  // the window is overwritten by the next pass
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = acc;
}

}  // namespace memra::cuda::v2
#endif  // __CUDACC__
