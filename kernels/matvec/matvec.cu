#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "matvec/matvec.h"
#include "matvec/matvec_route.cuh"
#include "quant/block_q8_1.h"
#include "quant/weight_decode.cuh"

namespace memra::cuda {

template <QType T>
cudaError_t launch_matvec_q8_1(const MatvecParams& p, size_t row_bytes, int64_t ldy, cudaStream_t s);

namespace {

template <QType T>
__device__ __forceinline__ float wload(const uint8_t* row, int64_t i) {
  if constexpr (T == QType::F32) return reinterpret_cast<const float*>(row)[i];
  else if constexpr (T == QType::F16) return __half2float(reinterpret_cast<const __half*>(row)[i]);
  else return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[i]);
}

// Eight consecutive weights from one 16-byte-aligned address (two for f32).
template <QType T>
__device__ __forceinline__ void wload8(const uint8_t* row, int64_t i, float (&v)[8]) {
  if constexpr (T == QType::F32) {
    const float4 a = reinterpret_cast<const float4*>(row)[i / 4];
    const float4 b = reinterpret_cast<const float4*>(row)[i / 4 + 1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const uint4 u = reinterpret_cast<const uint4*>(row)[i / 8];
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if constexpr (T == QType::F16) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
        v[2 * k] = f.x, v[2 * k + 1] = f.y;
      } else {
        const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[k]));
        v[2 * k] = f.x, v[2 * k + 1] = f.y;
      }
    }
  }
}

// Float weights, f32 activations, f32 FMA accumulation; VEC: 16-byte loads (cols % 8 == 0 and
// 16-byte-aligned rows), else one element per lane per step.
template <QType T, bool VEC, bool ROUTED = false>
__global__ void matvec_float_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_rows,
                                    int64_t n_cols, const float* __restrict__ x, int64_t ldx, int m,
                                    float* __restrict__ y, int64_t ldy, MatvecRoute route = {}) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  if constexpr (ROUTED) {
    const MatvecRouteSlot rs = matvec_route_slot(route, (size_t)ldx, y, ldy, row, lane);
    if (!rs.ok) return;
    w += rs.w_off, x += rs.x_off, y += rs.y_off;
  }
  const uint8_t* wr = w + row * row_bytes;
  float acc[kMatvecMaxM];
#pragma unroll
  for (int j = 0; j < kMatvecMaxM; ++j) acc[j] = 0.f;
  if constexpr (VEC) {
    for (int64_t i = 8 * (int64_t)lane; i < n_cols; i += 256) {
      float v[8];
      wload8<T>(wr, i, v);
#pragma unroll
      for (int j = 0; j < kMatvecMaxM; ++j) {
        if (j < m) {
          const float4 a = *reinterpret_cast<const float4*>(x + j * ldx + i);
          const float4 b = *reinterpret_cast<const float4*>(x + j * ldx + i + 4);
          acc[j] += v[0] * a.x + v[1] * a.y + v[2] * a.z + v[3] * a.w + v[4] * b.x + v[5] * b.y +
                    v[6] * b.z + v[7] * b.w;
        }
      }
    }
  } else {
    for (int64_t i = lane; i < n_cols; i += 32) {
      const float v = wload<T>(wr, i);
#pragma unroll
      for (int j = 0; j < kMatvecMaxM; ++j)
        if (j < m) acc[j] += v * x[j * ldx + i];
    }
  }
#pragma unroll
  for (int j = 0; j < kMatvecMaxM; ++j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < kMatvecMaxM; ++j)
      if (j < m) y[j * ldy + row] = acc[j];
  }
}

template <QType T>
cudaError_t launch_float(const MatvecParams& p, size_t rb, int64_t ldx, int64_t ldy, cudaStream_t s) {
  const int rpb = p.rows_per_block;
  const unsigned grid = (unsigned)((p.n_rows + rpb - 1) / rpb);
  const bool vec = p.n_cols % 8 == 0 && rb % 16 == 0 && ldx % 4 == 0 &&
                   reinterpret_cast<uintptr_t>(p.w) % 16 == 0 && reinterpret_cast<uintptr_t>(p.x_f32) % 16 == 0;
  const auto* w = static_cast<const uint8_t*>(p.w);
  if (p.ids) {
    const MatvecRoute r{p.ids, p.n_experts, p.expert_bytes, p.x_slot_div};
    const dim3 g(grid, (unsigned)p.n_slots);
    const bool rvec = vec && p.expert_bytes % 16 == 0;
    if (rvec)
      matvec_float_kernel<T, true, true><<<g, 32 * rpb, 0, s>>>(w, rb, p.n_rows, p.n_cols, p.x_f32, ldx, 1, p.y, ldy, r);
    else
      matvec_float_kernel<T, false, true><<<g, 32 * rpb, 0, s>>>(w, rb, p.n_rows, p.n_cols, p.x_f32, ldx, 1, p.y, ldy, r);
    return cudaGetLastError();
  }
  if (vec)
    matvec_float_kernel<T, true><<<grid, 32 * rpb, 0, s>>>(w, rb, p.n_rows, p.n_cols, p.x_f32, ldx, p.m, p.y, ldy);
  else
    matvec_float_kernel<T, false><<<grid, 32 * rpb, 0, s>>>(w, rb, p.n_rows, p.n_cols, p.x_f32, ldx, p.m, p.y, ldy);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_matvec(const MatvecParams& p, cudaStream_t stream) {
  if (!p.w || !p.y || p.n_rows <= 0 || p.n_cols <= 0 || p.m < 1 || p.m > kMatvecMaxM)
    return cudaErrorInvalidValue;
  if (p.rows_per_block != 1 && p.rows_per_block != 2 && p.rows_per_block != 4 && p.rows_per_block != 8)
    return cudaErrorInvalidValue;
  if ((p.n_rows + p.rows_per_block - 1) / p.rows_per_block > 0x7fffffff) return cudaErrorInvalidConfiguration;
  const auto& tr = qtype_traits(p.w_type);
  if (p.n_cols % tr.block_elems) return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.n_cols / tr.block_elems) * tr.block_bytes;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : dense;
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  if (rb < dense || ldy < p.n_rows) return cudaErrorInvalidValue;
  if (p.ids && (p.m != 1 || p.n_slots < 1 || p.n_slots > 65535 || p.n_experts < 1 || p.x_slot_div < 1 ||
                p.expert_bytes < (size_t)p.n_rows * rb))
    return cudaErrorInvalidValue;
  if (p.groups && (p.ids || p.n_groups < 1 || p.n_groups > 65535 || p.n_experts < 1 || p.x_slot_div < 1 ||
                   p.expert_bytes < (size_t)p.n_rows * rb))
    return cudaErrorInvalidValue;
  if (p.groups && !tr.quantized) return cudaErrorNotSupported;  // the grouped form: q8_1 activations only
  // The second matrix (w2 / y2): the routed one-token form of the quantized types only.
  if ((p.w2 != nullptr) != (p.y2 != nullptr)) return cudaErrorInvalidValue;
  if (p.w2 && (!p.ids || !tr.quantized || 2 * p.n_slots > 65535)) return cudaErrorInvalidValue;
  switch (p.w_type) {
#define MEMRA_CASE(N)                                                \
  case QType::N:                                                     \
    if (!p.x_q8_1 || p.n_cols % 32) return cudaErrorInvalidValue;    \
    return launch_matvec_q8_1<QType::N>(p, rb, ldy, stream);
    MEMRA_CUDA_WTYPES(MEMRA_CASE)
#undef MEMRA_CASE
    case QType::F32:
    case QType::F16:
    case QType::BF16: {
      const int64_t ldx = p.ldx ? p.ldx : p.n_cols;
      if (!p.x_f32 || ldx < p.n_cols) return cudaErrorInvalidValue;
      if (p.w_type == QType::F32) return launch_float<QType::F32>(p, rb, ldx, ldy, stream);
      if (p.w_type == QType::F16) return launch_float<QType::F16>(p, rb, ldx, ldy, stream);
      return launch_float<QType::BF16>(p, rb, ldx, ldy, stream);
    }
    default:
      return cudaErrorNotSupported;
  }
}

}  // namespace memra::cuda
