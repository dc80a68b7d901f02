// The float-weight decode matvec "mmvf2" (mmvf.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "act/act_math.cuh"
#include "common/launch.cuh"
#include "matvec/mmvf.h"

namespace memra::cuda {
namespace {

constexpr int kWarps = 4;  // warps per CTA
constexpr int kDepth = 2;  // chunks per row in flight per lane (c, c + 32)

struct Args {
  const uint8_t* w;
  const uint8_t* w2;
  size_t row_bytes;
  int64_t n_rows;
  int64_t n_chunks;  // n_cols / 8
  int m;
  const float* x;
  int64_t ldx;
  float* y;
  int64_t ldy;
  const float* res;
  int64_t ldres;
  bool preload;
};

// One 8-weight chunk of a row: 16 bytes (F16, BF16) or 32 (F32), read with 16-byte loads that do
// not allocate in L1 (the weights stream once; L1 keeps the activation).
template <QType T>
struct Chunk {
  static constexpr int kLoads = T == QType::F32 ? 2 : 1;
  uint4 u[kLoads];
  __device__ __forceinline__ void load(const uint8_t* row, int64_t c) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const uint8_t* p = row + (c * kLoads + i) * 16;
      asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(u[i].x), "=r"(u[i].y), "=r"(u[i].z), "=r"(u[i].w)
          : "l"(p));
    }
  }
  __device__ __forceinline__ void values(float (&v)[8]) const {
    if constexpr (T == QType::F32) {
      const uint32_t w[8] = {u[0].x, u[0].y, u[0].z, u[0].w, u[1].x, u[1].y, u[1].z, u[1].w};
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = __uint_as_float(w[e]);
    } else {
      const uint32_t w[4] = {u[0].x, u[0].y, u[0].z, u[0].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        float2 f;
        if constexpr (T == QType::F16) f = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
        else f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[k]));
        v[2 * k] = f.x;
        v[2 * k + 1] = f.y;
      }
    }
  }
};

// T: weight type; R: rows per warp; GLU: 0 none, 1 SiLU, 2 GELU-tanh (w2 the up matrix); MM: the
// activation rows the instance is unrolled for (m <= MM).
template <QType T, int R, int GLU, int MM>
__global__ void __launch_bounds__(32 * kWarps) mmvf_kernel(const Args a) {
  constexpr int NM = GLU ? 2 : 1;  // matrices
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row0 = ((int64_t)blockIdx.x * kWarps + warp) * R;
  if (row0 >= a.n_rows) return;  // warp-uniform; no barrier below
  const int nr = a.n_rows - row0 < R ? (int)(a.n_rows - row0) : R;
  Chunk<T> wc[kDepth][NM][R];
  auto issue = [&](int64_t c0) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int64_t c = c0 + 32 * d;
      if (c < a.n_chunks) {
#pragma unroll
        for (int mt = 0; mt < NM; ++mt)
#pragma unroll
          for (int r = 0; r < R; ++r)
            if (r < nr) wc[d][mt][r].load((mt ? a.w2 : a.w) + (size_t)(row0 + r) * a.row_bytes, c);
      }
    }
  };
  // Weights are never written during a step: the first chunks are requested before the wait.
  if (a.preload) issue(lane);
  pdl_wait();
  float resv[MM][R];
#pragma unroll
  for (int j = 0; j < MM; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r)
      resv[j][r] = GLU == 0 && a.res && lane == 0 && j < a.m && r < nr ? a.res[j * a.ldres + row0 + r] : 0.0f;
  float acc[MM][NM][R];
#pragma unroll
  for (int j = 0; j < MM; ++j)
#pragma unroll
    for (int mt = 0; mt < NM; ++mt)
#pragma unroll
      for (int r = 0; r < R; ++r) acc[j][mt][r] = 0.0f;
  for (int64_t c0 = lane; c0 < a.n_chunks; c0 += 32 * kDepth) {
    if (c0 != lane || !a.preload) issue(c0);
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int64_t c = c0 + 32 * d;
      if (c >= a.n_chunks) continue;
#pragma unroll
      for (int j = 0; j < MM; ++j) {
        if (j >= a.m) continue;
        const float4* xp = reinterpret_cast<const float4*>(a.x + j * a.ldx + 8 * c);
        const float4 x0 = xp[0], x1 = xp[1];
        const float xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
        for (int mt = 0; mt < NM; ++mt)
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (r >= nr) continue;
            float v[8];
            wc[d][mt][r].values(v);
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[j][mt][r] = __fmaf_rn(v[e], xv[e], acc[j][mt][r]);
          }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < MM; ++j)
#pragma unroll
    for (int mt = 0; mt < NM; ++mt)
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[j][mt][r] = __fadd_rn(acc[j][mt][r], __shfl_xor_sync(0xffffffffu, acc[j][mt][r], o));
  if (lane != 0) return;
#pragma unroll
  for (int j = 0; j < MM; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (j >= a.m || r >= nr) continue;
      float v = acc[j][0][r];
      if constexpr (GLU == 1) v = __fmul_rn(act<ActKind::Silu>(v), acc[j][NM - 1][r]);
      if constexpr (GLU == 2) v = __fmul_rn(act<ActKind::GeluTanh>(v), acc[j][NM - 1][r]);
      if (GLU == 0 && a.res) v = __fadd_rn(resv[j][r], v);
      a.y[j * a.ldy + row0 + r] = v;
    }
}

template <QType T, int R, int MM>
cudaError_t launch_r(const Args& a, int glu, cudaStream_t s) {
  const int64_t rows_per_cta = (int64_t)kWarps * R;
  const dim3 grid((unsigned)((a.n_rows + rows_per_cta - 1) / rows_per_cta)), block(32 * kWarps);
  if (glu == 1) return launch_kernel(mmvf_kernel<T, R, 1, MM>, grid, block, 0, s, a);
  if (glu == 2) return launch_kernel(mmvf_kernel<T, R, 2, MM>, grid, block, 0, s, a);
  return launch_kernel(mmvf_kernel<T, R, 0, MM>, grid, block, 0, s, a);
}

// One-token instances (MM = 1) and the verify batches' (MM = 8); 1, 2 and 4 rows per warp (2 only
// in the reduced build).
template <QType T>
cudaError_t launch_t(const Args& a, int glu, int r, cudaStream_t s) {
#ifndef MEMRA_REDUCED_INSTANCES
  if (r == 1) return a.m == 1 ? launch_r<T, 1, 1>(a, glu, s) : launch_r<T, 1, kMmvfMaxM>(a, glu, s);
  if (r == 4) return a.m == 1 ? launch_r<T, 4, 1>(a, glu, s) : launch_r<T, 4, kMmvfMaxM>(a, glu, s);
#endif
  if (r == 2) return a.m == 1 ? launch_r<T, 2, 1>(a, glu, s) : launch_r<T, 2, kMmvfMaxM>(a, glu, s);
  return cudaErrorNotSupported;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t launch_mmvf(const MmvfParams& p, cudaStream_t stream) {
  if (p.w_type != QType::F16 && p.w_type != QType::BF16 && p.w_type != QType::F32) return cudaErrorNotSupported;
  const size_t elem = p.w_type == QType::F32 ? 4 : 2;
  const size_t rb = p.row_bytes ? p.row_bytes : (size_t)p.n_cols * elem;
  const int64_t ldx = p.ldx ? p.ldx : p.n_cols, ldy = p.ldy ? p.ldy : p.n_rows;
  if (!p.w || !p.x || !p.y || p.n_rows <= 0 || p.n_cols <= 0 || p.n_cols % 8 || p.m < 1 || p.m > kMmvfMaxM ||
      rb % 16 || rb < (size_t)p.n_cols * elem || !aligned16(p.w) || !aligned16(p.x) || ldx % 4 || ldx < p.n_cols ||
      ldy < p.n_rows || p.glu < 0 || p.glu > 2 || (p.glu != 0) != (p.w2 != nullptr) || (p.w2 && !aligned16(p.w2)) ||
      (p.residual && p.glu != 0) || (p.ld_residual && p.ld_residual < p.n_rows) ||
      (p.rows_per_warp != 1 && p.rows_per_warp != 2 && p.rows_per_warp != 4))
    return cudaErrorInvalidValue;
  if ((p.n_rows + (int64_t)kWarps * p.rows_per_warp - 1) / ((int64_t)kWarps * p.rows_per_warp) > 0x7fffffff)
    return cudaErrorInvalidValue;
  Args a;
  a.w = static_cast<const uint8_t*>(p.w);
  a.w2 = static_cast<const uint8_t*>(p.w2);
  a.row_bytes = rb;
  a.n_rows = p.n_rows;
  a.n_chunks = p.n_cols / 8;
  a.m = p.m;
  a.x = p.x;
  a.ldx = ldx;
  a.y = p.y;
  a.ldy = ldy;
  a.res = p.residual;
  a.ldres = p.ld_residual ? p.ld_residual : ldy;
  a.preload = p.preload;
  switch (p.w_type) {
    case QType::F16: return launch_t<QType::F16>(a, p.glu, p.rows_per_warp, stream);
    case QType::BF16: return launch_t<QType::BF16>(a, p.glu, p.rows_per_warp, stream);
    default: return launch_t<QType::F32>(a, p.glu, p.rows_per_warp, stream);
  }
}

}  // namespace memra::cuda
