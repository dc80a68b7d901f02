#pragma once
// The RMSNorm arithmetic every CUDA norm kernel shares (norm.cu, the fused q/k head norm + RoPE
// of rope.cu, the MoE router's fused norm of moe_router.cu): one definition, so fused and unfused
// forms give the same bits.
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {

// launch_rms_norm's block: T threads (a multiple of 32, at most kNormMaxThreads), thread t owning
// the 4-float chunks t, t + T, ... of a row; its sum of squares in that order, then
// norm_block_sum, is the row's scale everywhere (norm.cu's comment).
inline constexpr int kNormMaxThreads = 256;
__host__ __device__ inline constexpr int rms_norm_threads(int cols) {
  const int n_chunks = (cols + 3) / 4;
  const int t = (n_chunks + 8 * 32 - 1) / (8 * 32) * 32;
  return t < kNormMaxThreads ? t : kNormMaxThreads;
}

// Block-wide sum with a fixed order: per-warp xor tree, then warp 0 over the warp partials. A
// block with more warps than the row's T / 32 whose extra threads hold +0 gives the same bits
// (each extra partial is +0, added to non-negative sums of squares).
__device__ __forceinline__ float norm_block_sum(float v, float* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum_f32(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? smem[lane] : 0.0f;
  v = warp_sum_f32(v);
  __syncthreads();  // smem may be reused by the caller
  return v;
}

__device__ __forceinline__ float norm_scale(float sumsq, int cols, float eps) {
  return 1.0f / sqrtf(sumsq / (float)cols + eps);
}

// kernels.norm_defer's partial sums of squares: one per 32-element block of a row, so that a
// producer owning one q8s block (the residual matvec that takes the next norm, mmvs_emit.cu) writes
// the partial the deferred norm kernel writes. Each of the block's 8 consecutive lanes holds 4
// consecutive elements (lane k of the group: elements 4k .. 4k + 3, the q8s emit's layout) and sums
// their squares in element order from 0; then the group's xor tree at distances 1, 2, 4. Every lane
// of the warp calls it (the 4 groups at once); each group's lanes end with its block's partial.
__device__ __forceinline__ float defer_block_ss(const float (&u)[4]) {
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) ss = __fadd_rn(ss, __fmul_rn(u[e], u[e]));
#pragma unroll
  for (int o = 1; o < 8; o <<= 1) ss = __fadd_rn(ss, __shfl_xor_sync(0xffffffffu, ss, o));
  return ss;
}
// A consumer's share of a row's n partials: lane l sums partials l, l + 32, ... in that order
// (from 0); the row's sum is then warp_sum_f32 of the lanes' shares (one order everywhere, so the
// matvecs and the norm that writes the scale agree bit for bit).
__device__ __forceinline__ float defer_lane_sum(const float* p, int n, int lane) {
  float s = 0.0f;
  for (int i = lane; i < n; i += 32) s = __fadd_rn(s, p[i]);
  return s;
}

// x * inv, then times the weight wi when there is one.
__device__ __forceinline__ float normed_by(float x, float inv, bool has_w, float wi) {
  const float v = __fmul_rn(x, inv);
  return has_w ? __fmul_rn(v, wi) : v;
}
__device__ __forceinline__ float normed(float x, float inv, const float* w, int i) {
  return normed_by(x, inv, w != nullptr, w ? w[i] : 0.0f);
}

}  // namespace memra::cuda
