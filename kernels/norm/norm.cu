#include <algorithm>

#include "norm/norm_kernels.h"
#include "common/launch.cuh"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

// Thread t of a row's block owns the 32-element blocks t, t + T, ... of the row (T threads, a
// multiple of 32, at most 256: for rows up to 8192 columns one block per thread, held in
// registers from the load to the store; longer rows re-read the later blocks). Every variant (any MODE/EMIT, any row count, aligned
// or not) sums a row's squares in the same order: per thread over its blocks and elements in
// increasing order, then the fixed block_sum tree over the threads. So the bits depend only on
// (x, cols), and the q8 emits need no shuffles: a thread quantizes its own block.
// Why: the previous form (256 threads, one element per thread per step, one warp per q8 block)
// spent 9.7 us per 4096-column row on the H200 (ncu, 18% of a qwen3-8b decode step,
// receipts/h200/logs/ncu-decode-step-qwen3-8b-q4_k_m-c019650-20261201.txt); the likely cause
// (not profiled line by line): 16 dependent shuffle chains per warp, one per q8 block.
constexpr int kNormMaxThreads = 256;
constexpr int kBlk = 32;

int norm_threads(int cols) {
  const int nb = (cols + kBlk - 1) / kBlk;
  return std::min(kNormMaxThreads, (nb + 31) / 32 * 32);
}

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
  bool vec;     // every f32 row 16-byte aligned: float4 loads and stores (same values)
};

// Elements [32b, 32b + n) of a row (n = 32 but for a short last block), zeros beyond.
__device__ __forceinline__ void load_blk(const float* p, int n, bool vec, float (&v)[kBlk]) {
  if (vec && n == kBlk) {
#pragma unroll
    for (int k = 0; k < kBlk / 4; ++k) {
      const float4 f = reinterpret_cast<const float4*>(p)[k];
      v[4 * k] = f.x;
      v[4 * k + 1] = f.y;
      v[4 * k + 2] = f.z;
      v[4 * k + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < kBlk; ++e) v[e] = e < n ? p[e] : 0.0f;
  }
}
__device__ __forceinline__ void store_blk(float* p, int n, bool vec, const float (&v)[kBlk]) {
  if (vec && n == kBlk) {
#pragma unroll
    for (int k = 0; k < kBlk / 4; ++k)
      reinterpret_cast<float4*>(p)[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
  } else {
#pragma unroll
    for (int e = 0; e < kBlk; ++e)
      if (e < n) p[e] = v[e];
  }
}

// MODE 0: plain (src = x). MODE 1: res_out = x + delta, src = res_out.
// EMIT 0: f32 out; 1: q8_1 blocks only; 2: f32 out and its q8s planes (mmvs.h), the planes
// byte-identical to launch_quantize_q8s(out) (same quantization of the same values).
template <int MODE, int EMIT>
__global__ void __launch_bounds__(kNormMaxThreads) rms_norm_kernel(NormArgs a) {
  __shared__ float smem[32];
  const int64_t r = blockIdx.x;
  const int cols = a.cols, T = blockDim.x, t0 = threadIdx.x;
  const int nb = (cols + kBlk - 1) / kBlk;
  const bool own = t0 < nb;  // this thread's first block (the only one up to 8192 columns)
  const int n0 = own ? min(kBlk, cols - t0 * kBlk) : 0;
  // The norm weights of the first block are requested before the dependency wait: weights are
  // never written during a step.
  float wv[kBlk] = {};
  if (a.w && own) load_blk(a.w + t0 * kBlk, n0, a.vec, wv);
  pdl_wait();
  float v[kBlk];
  float ss = 0.0f;
  for (int b = t0; b < nb; b += T) {
    const int n = min(kBlk, cols - b * kBlk);
    float u[kBlk];
    if (MODE == 1) {
      float d[kBlk];
      load_blk(a.x + r * a.ld_x + b * kBlk, n, a.vec, u);
      load_blk(a.delta + r * a.ld_delta + b * kBlk, n, a.vec, d);
#pragma unroll
      for (int e = 0; e < kBlk; ++e) u[e] = u[e] + d[e];
      store_blk(a.res_out + r * a.ld_res_out + b * kBlk, n, a.vec, u);
    } else {
      load_blk(a.x + r * a.ld_x + b * kBlk, n, a.vec, u);
    }
#pragma unroll
    for (int e = 0; e < kBlk; ++e) ss += __fmul_rn(u[e], u[e]);  // zeros past n add nothing
    if (b == t0) {
#pragma unroll
      for (int e = 0; e < kBlk; ++e) v[e] = u[e];
    }
  }
  // The barriers of block_sum order every read of x / delta before any write of out (which may
  // alias them) by another thread; res_out is re-read below only by the thread that wrote it.
  const float inv = norm_scale(block_sum(ss, smem), cols, a.eps);
  const float* src = MODE == 1 ? a.res_out + r * a.ld_res_out : a.x + r * a.ld_x;
  for (int b = t0; b < nb; b += T) {
    const int n = min(kBlk, cols - b * kBlk);
    float u[kBlk], wb[kBlk] = {};
    if (b == t0) {
#pragma unroll
      for (int e = 0; e < kBlk; ++e) {
        u[e] = v[e];
        wb[e] = wv[e];
      }
    } else {
      load_blk(src + b * kBlk, n, a.vec, u);
      if (a.w) load_blk(a.w + b * kBlk, n, a.vec, wb);
    }
#pragma unroll
    for (int e = 0; e < kBlk; ++e) u[e] = normed_by(u[e], inv, a.w != nullptr, wb[e]);
    if (EMIT != 1) store_blk(a.out + r * a.ld_out + b * kBlk, n, a.vec, u);
    if (EMIT == 2) emit_q8s_own_block(u, a.xq + r * cols + b * kBlk, a.xds + (r * cols) / kBlk + b);
    if (EMIT == 1) emit_q8_1_own_block(u, a.out_q + r * a.ld_q + (int64_t)b * kQ81BlockBytes);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
bool vec_ok(const void* p, int64_t ld) { return !p || (aligned16(p) && ld % 4 == 0); }

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
  const bool vec = vec_ok(p.x, p.ld_x) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
  const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps,
                   p.q8s_xq, static_cast<float2*>(p.q8s_xds), vec};
  const dim3 block(norm_threads(p.cols));
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<0, 2>, dim3(p.rows), block, 0, s, a);
  return launch_kernel(rms_norm_kernel<0, 0>, dim3(p.rows), block, 0, s, a);
}

cudaError_t launch_add_rms_norm(const AddRmsNormParams& p, cudaStream_t s) {
  if (p.rows < 0 || p.cols <= 0 || !p.residual || !p.delta || !p.residual_out || !p.out ||
      p.ld_residual < p.cols || p.ld_delta < p.cols || p.ld_residual_out < p.cols || p.ld_out < p.cols)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  if ((p.q8s_xq != nullptr) != (p.q8s_xds != nullptr) || (p.q8s_xq && p.cols % 32)) return cudaErrorInvalidValue;
  const bool vec = vec_ok(p.residual, p.ld_residual) && vec_ok(p.delta, p.ld_delta) &&
                   vec_ok(p.residual_out, p.ld_residual_out) && vec_ok(p.out, p.ld_out) && vec_ok(p.w, 0);
  const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                   p.w, p.out, p.ld_out, nullptr, 0, p.cols, p.eps, p.q8s_xq, static_cast<float2*>(p.q8s_xds), vec};
  const dim3 block(norm_threads(p.cols));
  if (p.q8s_xq) return launch_kernel(rms_norm_kernel<1, 2>, dim3(p.rows), block, 0, s, a);
  return launch_kernel(rms_norm_kernel<1, 0>, dim3(p.rows), block, 0, s, a);
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
    const bool vec = vec_ok(p.residual, p.ld_residual) && vec_ok(p.delta, p.ld_delta) &&
                     vec_ok(p.residual_out, p.ld_residual_out) && vec_ok(p.w, 0);
    const NormArgs a{p.residual, p.ld_residual, p.delta, p.ld_delta, p.residual_out, p.ld_residual_out,
                     p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps, nullptr, nullptr, vec};
    rms_norm_kernel<1, 1><<<p.rows, norm_threads(p.cols), 0, s>>>(a);
  } else {
    if (!p.x || p.ld_x < p.cols) return cudaErrorInvalidValue;
    const bool vec = vec_ok(p.x, p.ld_x) && vec_ok(p.w, 0);
    const NormArgs a{p.x, p.ld_x, nullptr, 0, nullptr, 0, p.w, nullptr, 0, oq, p.ld_out_bytes, p.cols, p.eps,
                     nullptr, nullptr, vec};
    rms_norm_kernel<0, 1><<<p.rows, norm_threads(p.cols), 0, s>>>(a);
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
