#include "norm/norm_kernels.h"
#include "common/launch.cuh"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

// Fixed for every RMSNorm variant: the reduction tree, and so the bits, depend on it.
constexpr int kNormThreads = 256;
constexpr int kNormBatch = 16;

// Block-wide sum with a fixed order: per-warp xor tree, then warp 0 over the warp partials.
__device__ __forceinline__ float block_sum(float v, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum_f32(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? smem[lane] : 0.0f;
  v = warp_sum_f32(v);
  __syncthreads();  // smem may be reused by the caller
  return v;
}

struct NormArgs {
  const float* x;  // MODE 0 input, MODE 1 residual
  int64_t ld_x;
  const float* delta;
  int64_t ld_delta;
  float* res_out;
  int64_t ld_res_out;
  const float* w;
  float* out;
  int64_t ld_out;
  uint8_t* out_q;
  int64_t ld_q;
  int cols;
  float eps;
  int8_t* xq;   // EMIT 2: q8s planes of out (rows x cols, dense)
  float2* xds;
};

// MODE 0: plain (src = x). MODE 1: res_out = x + delta, src = res_out.
// EMIT 0: f32 out; 1: q8_1 blocks only; 2: f32 out and its q8s planes (mmvs.h), the planes
// byte-identical to launch_quantize_q8s(out) (same values through emit_q8s_block).
template <int MODE, int EMIT>
__global__ void __launch_bounds__(kNormThreads) rms_norm_kernel(NormArgs a) {
  __shared__ float smem[32];
  pdl_wait();
  const int64_t r = blockIdx.x;
  const int cols = a.cols;
  const float* w = a.w;
  const float* src;
  float ss = 0.0f;
  // Loads are issued kNormBatch at a time before the stores: with one element per iteration the
  // store to ro[] (which may alias the residual) kept the next loads behind it, 16 round trips
  // per row: 14.9 us for 4096 columns on the H200 (ncu, 2026-12-01). Per-thread order unchanged.
  if (MODE == 1) {
    const float* res = a.x + r * a.ld_x;
    const float* dl = a.delta + r * a.ld_delta;
    float* ro = a.res_out + r * a.ld_res_out;
    for (int base = threadIdx.x; base < cols; base += kNormThreads * kNormBatch) {
      float v[kNormBatch];
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = base + j * kNormThreads;
        v[j] = i < cols ? res[i] + dl[i] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = base + j * kNormThreads;
        if (i < cols) {
          ro[i] = v[j];
          ss += __fmul_rn(v[j], v[j]);
        }
      }
    }
    src = ro;
  } else {
    src = a.x + r * a.ld_x;
    for (int base = threadIdx.x; base < cols; base += kNormThreads * kNormBatch) {
      float v[kNormBatch];
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = base + j * kNormThreads;
        v[j] = i < cols ? src[i] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j)
        if (base + j * kNormThreads < cols) ss += __fmul_rn(v[j], v[j]);
    }
  }
  const float inv = norm_scale(block_sum(ss, smem), cols, a.eps);  // its barrier publishes ro[]
  if (EMIT != 1) {
    float* o = a.out + r * a.ld_out;
    for (int base = threadIdx.x; base < cols; base += kNormThreads * kNormBatch) {
      float v[kNormBatch];
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = base + j * kNormThreads;
        v[j] = i < cols ? normed(src[i], inv, w, i) : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < kNormBatch; ++j) {
        const int i = base + j * kNormThreads;
        if (i < cols) o[i] = v[j];
        // Element i of warp w is lane l of q8 block i / 32 (cols % 32 == 0: warp-uniform test).
        if (EMIT == 2 && i < cols)
          emit_q8s_block(v[j], i & 31, a.xq + r * cols + (i & ~31), a.xds + (r * cols + i) / 32);
      }
    }
  } else {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint8_t* oq = a.out_q + r * a.ld_q;
    for (int b = warp; b < cols / 32; b += kNormThreads / 32) {
      const int i = b * 32 + lane;
      emit_q8_1_block(normed(src[i], inv, w, i), lane, oq + (int64_t)b * kQ81BlockBytes);
    }
  }
}

// One warp per (row, head).
__global__ void head_rms_norm_kernel(const float* x, int64_t ld_x, float* out, int64_t ld_out,
                                     const float* __restrict__ w, int rows, int n_head, int head_dim,
                                     float eps) {
  pdl_wait();
  const int gw = (int)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (gw >= rows * n_head) return;
  const float* h = x + (int64_t)(gw / n_head) * ld_x + (int64_t)(gw % n_head) * head_dim;
  float* o = out + (int64_t)(gw / n_head) * ld_out + (int64_t)(gw % n_head) * head_dim;
  // Up to 256 dims: every load of the head before the first store (o may alias h).
  constexpr int kMax = 8;
  float v[kMax];
#pragma unroll
  for (int j = 0; j < kMax; ++j) v[j] = lane + 32 * j < head_dim ? h[lane + 32 * j] : 0.0f;
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kMax; ++j)
    if (lane + 32 * j < head_dim) ss += __fmul_rn(v[j], v[j]);
  for (int i = lane + 32 * kMax; i < head_dim; i += 32) ss += __fmul_rn(h[i], h[i]);
  const float inv = norm_scale(warp_sum_f32(ss), head_dim, eps);
  if (head_dim <= 32 * kMax) {
#pragma unroll
    for (int j = 0; j < kMax; ++j)
      if (lane + 32 * j < head_dim) o[lane + 32 * j] = normed(v[j], inv, w, lane + 32 * j);
  } else {
    for (int i = lane; i < head_dim; i += 32) o[i] = normed(h[i], inv, w, i);
  }
}

}  // namespace

cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || !p.x || !p.out || p.ld_x < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  if ((p.q8s_xq != nullptr) != (p.q8s_xds != nullptr) || (p.q8s_xq && p.cols % 32)) return cudaErrorInvalidValue;
  const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps,
                   p.q8s_xq, static_cast<float2*>(p.q8s_xds)};
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<0, 2>, dim3(p.rows), dim3(kNormThreads), 0, s, a);
  return launch_kernel(rms_norm_kernel<0, 0>, dim3(p.rows), dim3(kNormThreads), 0, s, a);
}

cudaError_t launch_add_rms_norm(const AddRmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || !p.residual || !p.delta || !p.residual_out || !p.out ||
      p.ld_residual < p.cols || p.ld_delta < p.cols || p.ld_residual_out < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  if ((p.q8s_xq != nullptr) != (p.q8s_xds != nullptr) || (p.q8s_xq && p.cols % 32)) return cudaErrorInvalidValue;
  const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                   p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps, p.q8s_xq, static_cast<float2*>(p.q8s_xds)};
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<1, 2>, dim3(p.rows), dim3(kNormThreads), 0, s, a);
  return launch_kernel(rms_norm_kernel<1, 0>, dim3(p.rows), dim3(kNormThreads), 0, s, a);
}

cudaError_t launch_rms_norm_q8_1(const RmsNormQ81Params& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || p.cols % 32 || !p.out_q8_1 ||
      p.ld_out_bytes < (int64_t)p.cols / 32 * kQ81BlockBytes)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  auto* oq = static_cast<uint8_t*>(p.out_q8_1);
  if (p.residual) {
    if (!p.delta || !p.residual_out || p.ld_residual < p.cols || p.ld_delta < p.cols ||
        p.ld_residual_out < p.cols)
      return cudaErrorInvalidValue;
    const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                     p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps, nullptr, nullptr};
    rms_norm_kernel<1, 1><<<p.rows, kNormThreads, 0, s>>>(a);
  } else {
    if (!p.x || p.ld_x < p.cols) return cudaErrorInvalidValue;
    const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps,
                     nullptr, nullptr};
    rms_norm_kernel<0, 1><<<p.rows, kNormThreads, 0, s>>>(a);
  }
  return cudaGetLastError();
}

cudaError_t launch_head_rms_norm(const HeadRmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.n_head <= 0 || p.head_dim <= 0 || !p.x || !p.out ||
      p.ld_x < (int64_t)p.n_head * p.head_dim || p.ld_out < (int64_t)p.n_head * p.head_dim)
    return cudaErrorInvalidValue;
  const int64_t warps = (int64_t)p.rows * p.n_head;
  if (warps == 0) return cudaSuccess;
  const int threads = 256;
  const int64_t blocks = (warps * 32 + threads - 1) / threads;
  return launch_kernel(head_rms_norm_kernel, dim3((unsigned)blocks), dim3(threads), 0, s, p.x, p.ld_x, p.out, p.ld_out, p.w, p.rows,
                       p.n_head, p.head_dim, p.eps);
}

}  // namespace memra::cuda
