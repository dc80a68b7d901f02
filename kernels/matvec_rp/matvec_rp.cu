#include <cuda_fp16.h>

#include "matvec_rp/matvec_rp.h"
#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {
namespace {

constexpr int kMaxM = 8;

// One thread per GGUF block: nine 2-byte loads in, one 16-byte and one 2-byte store out.
__global__ void repack_q4_0_rp_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_chunks,
                                      int64_t n_blocks, uint4* __restrict__ qs, uint16_t* __restrict__ d) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_blocks) return;
  const int64_t r = i / n_chunks, c = i % n_chunks;
  const uint8_t* b = w + r * row_bytes + c * 18;
  d[i] = *reinterpret_cast<const uint16_t*>(b);
  uint4 v;
  v.x = wq::ld_u32_a2(b + 2);
  v.y = wq::ld_u32_a2(b + 6);
  v.z = wq::ld_u32_a2(b + 10);
  v.w = wq::ld_u32_a2(b + 14);
  qs[i] = v;
}

// The chunk WTraits<Q4_0>::decode builds from the same 18 bytes, here from the two planes: the
// 16 qs bytes arrive as one uint4 (word k = qs[4k..4k+3], little-endian, as ld_u32_a2 reads them).
__device__ __forceinline__ void decode_rp(const uint4 v, uint16_t dh, wq::Chunk& c) {
  c.d[0] = c.d[1] = __half2float(__ushort_as_half(dh));
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    c.q[k] = (int)wq::vsub4(w[k] & 0x0F0F0F0Fu, 0x08080808u);
    c.q[k + 4] = (int)wq::vsub4((w[k] >> 4) & 0x0F0F0F0Fu, 0x08080808u);
  }
  c.m[0] = c.m[1] = 0.f;
}

// q8_1 blocks -> split planes, one thread per block.
__global__ void repack_q8_1_rp_kernel(const uint8_t* __restrict__ x, int64_t n_blocks, uint4* __restrict__ qs,
                                      uint16_t* __restrict__ d) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_blocks) return;
  const uint32_t* b = reinterpret_cast<const uint32_t*>(x + i * sizeof(BlockQ8_1));
  d[i] = (uint16_t)(b[0] & 0xFFFFu);
  qs[2 * i] = make_uint4(b[1], b[2], b[3], b[4]);
  qs[2 * i + 1] = make_uint4(b[5], b[6], b[7], b[8]);
}

// wq::chunk_dot_q8_1<Q4_0> with the activation block given as (d, quants) instead of a pointer to
// its 36 bytes: the same dp4a chains (k = 0..3, 4..7), the same int sum, the same two float
// products; the caller's `acc += ` then contracts to the same FMA (checked in the PTX: one
// mul.f32 and one fma.rn.f32 per chunk and activation row in both kernels).
__device__ __forceinline__ float chunk_dot_q4_0_split(const wq::Chunk& ch, uint16_t xdh, const uint4 a, const uint4 b) {
  const float dx = __half2float(__ushort_as_half(xdh));
  const int xq[8] = {(int)a.x, (int)a.y, (int)a.z, (int)a.w, (int)b.x, (int)b.y, (int)b.z, (int)b.w};
  int s0 = 0, s1 = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) s0 = wq::dp4a(ch.q[k], xq[k], s0);
#pragma unroll
  for (int k = 4; k < 8; ++k) s1 = wq::dp4a(ch.q[k], xq[k], s1);
  const float part = ch.d[0] * (float)(s0 + s1);
  return dx * part;
}

// Mirrors matvec_q8_1_kernel<Q4_0, MMAX> (kernels/matvec/matvec_q.cuh) step for step; only the
// loads differ (the weights always, the activations when XS). PF > 1 issues the loads of PF chunks first and then accumulates them in
// the same increasing-chunk order, so every lane's float sum sees the same operands in the same
// order and the result bits cannot change.
template <int MMAX, int PF, bool XS>
__global__ void matvec_rp_q4_0_kernel(const uint4* __restrict__ qs, const uint16_t* __restrict__ d, int64_t n_rows,
                                      int n_chunks, const uint8_t* __restrict__ x, const uint4* __restrict__ x_qs,
                                      const uint16_t* __restrict__ x_d, int m, float* __restrict__ y, int64_t ldy) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  const uint4* qr = qs + row * n_chunks;
  const uint16_t* dr = d + row * n_chunks;
  const size_t x_row_bytes = (size_t)n_chunks * sizeof(BlockQ8_1);
  float acc[MMAX];
#pragma unroll
  for (int j = 0; j < MMAX; ++j) acc[j] = 0.f;

  for (int c0 = lane; c0 < n_chunks; c0 += 32 * PF) {
    uint4 v[PF];
    uint16_t dh[PF];
#pragma unroll
    for (int u = 0; u < PF; ++u) {
      const int c = c0 + 32 * u;
      if (c < n_chunks) {
        v[u] = qr[c];
        dh[u] = dr[c];
      }
    }
#pragma unroll
    for (int u = 0; u < PF; ++u) {
      const int c = c0 + 32 * u;
      if (c < n_chunks) {
        wq::Chunk ch;
        decode_rp(v[u], dh[u], ch);
#pragma unroll
        for (int j = 0; j < MMAX; ++j) {
          if (j < m) {
            if constexpr (XS) {
              const uint4* xr = x_qs + (size_t)j * n_chunks * 2 + 2 * c;
              acc[j] += chunk_dot_q4_0_split(ch, x_d[(size_t)j * n_chunks + c], xr[0], xr[1]);
            } else {
              acc[j] += wq::chunk_dot_q8_1<QType::Q4_0>(ch, x + j * x_row_bytes + (size_t)c * sizeof(BlockQ8_1));
            }
          }
        }
      }
    }
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

template <int MMAX, int PF>
cudaError_t launch_m(const MatvecRpQ4_0Params& p, int64_t ldy, cudaStream_t s) {
  const int rpb = p.rows_per_block;
  const int64_t grid = (p.n_rows + rpb - 1) / rpb;
  const auto* qs = static_cast<const uint4*>(p.qs);
  const auto* d = static_cast<const uint16_t*>(p.d);
  const auto* x = static_cast<const uint8_t*>(p.x_q8_1);
  const auto* xqs = static_cast<const uint4*>(p.x_qs);
  const auto* xd = static_cast<const uint16_t*>(p.x_d);
  const int nc = (int)(p.n_cols / 32);
  if (p.x_qs)
    matvec_rp_q4_0_kernel<MMAX, PF, true><<<(unsigned)grid, 32 * rpb, 0, s>>>(qs, d, p.n_rows, nc, x, xqs, xd, p.m, p.y, ldy);
  else
    matvec_rp_q4_0_kernel<MMAX, PF, false><<<(unsigned)grid, 32 * rpb, 0, s>>>(qs, d, p.n_rows, nc, x, xqs, xd, p.m, p.y, ldy);
  return cudaGetLastError();
}

// The same MMAX instances as the GGUF kernel (1, 2, 4, 8): the masked extra rows do not change
// any float operation, but matching instances keeps the two kernels' code shapes comparable.
template <int PF>
cudaError_t launch_pf(const MatvecRpQ4_0Params& p, int64_t ldy, cudaStream_t s) {
  if (p.m == 1) return launch_m<1, PF>(p, ldy, s);
  if (p.m == 2) return launch_m<2, PF>(p, ldy, s);
  if (p.m <= 4) return launch_m<4, PF>(p, ldy, s);
  return launch_m<8, PF>(p, ldy, s);
}

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

cudaError_t launch_repack_q4_0_rp(const RepackQ4_0RpParams& p, cudaStream_t stream) {
  if (!p.w || !p.qs || !p.d || p.n_rows <= 0 || p.n_cols <= 0 || p.n_cols % 32) return cudaErrorInvalidValue;
  const int64_t n_chunks = p.n_cols / 32;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : (size_t)n_chunks * 18;
  if (rb < (size_t)n_chunks * 18 || rb % 2) return cudaErrorInvalidValue;
  if (!aligned(p.w, 2) || !aligned(p.qs, 16) || !aligned(p.d, 2)) return cudaErrorMisalignedAddress;
  const int64_t n_blocks = p.n_rows * n_chunks;
  const int64_t grid = (n_blocks + 255) / 256;
  if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
  repack_q4_0_rp_kernel<<<(unsigned)grid, 256, 0, stream>>>(static_cast<const uint8_t*>(p.w), rb, n_chunks, n_blocks,
                                                            static_cast<uint4*>(p.qs), static_cast<uint16_t*>(p.d));
  return cudaGetLastError();
}

cudaError_t launch_repack_q8_1_rp(const RepackQ8_1RpParams& p, cudaStream_t stream) {
  if (!p.x || !p.qs || !p.d || p.m <= 0 || p.n_cols <= 0 || p.n_cols % 32) return cudaErrorInvalidValue;
  if (!aligned(p.x, 4) || !aligned(p.qs, 16) || !aligned(p.d, 2)) return cudaErrorMisalignedAddress;
  const int64_t n_blocks = p.m * (p.n_cols / 32);
  const int64_t grid = (n_blocks + 255) / 256;
  if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
  repack_q8_1_rp_kernel<<<(unsigned)grid, 256, 0, stream>>>(static_cast<const uint8_t*>(p.x), n_blocks,
                                                            static_cast<uint4*>(p.qs), static_cast<uint16_t*>(p.d));
  return cudaGetLastError();
}

cudaError_t launch_matvec_rp_q4_0(const MatvecRpQ4_0Params& p, cudaStream_t stream) {
  const bool xs = p.x_qs != nullptr;
  if (!p.qs || !p.d || !p.y || (xs ? !p.x_d : !p.x_q8_1)) return cudaErrorInvalidValue;
  if (p.n_rows <= 0 || p.n_cols <= 0 || p.n_cols % 32 || p.m < 1 || p.m > kMaxM) return cudaErrorInvalidValue;
  if (p.rows_per_block != 1 && p.rows_per_block != 2 && p.rows_per_block != 4 && p.rows_per_block != 8)
    return cudaErrorInvalidValue;
  if (p.n_cols / 32 > 0x7fffffff || (p.n_rows + p.rows_per_block - 1) / p.rows_per_block > 0x7fffffff)
    return cudaErrorInvalidConfiguration;
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  if (ldy < p.n_rows) return cudaErrorInvalidValue;
  if (!aligned(p.qs, 16) || !aligned(p.d, 2)) return cudaErrorMisalignedAddress;
  if (xs ? (!aligned(p.x_qs, 16) || !aligned(p.x_d, 2)) : !aligned(p.x_q8_1, 4)) return cudaErrorMisalignedAddress;
  if (p.prefetch == 1) return launch_pf<1>(p, ldy, stream);
  if (p.prefetch == 4) return launch_pf<4>(p, ldy, stream);
  return cudaErrorInvalidValue;
}

}  // namespace memra::cuda
