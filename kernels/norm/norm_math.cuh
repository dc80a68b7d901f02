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

// x * inv, then times the weight wi when there is one.
__device__ __forceinline__ float normed_by(float x, float inv, bool has_w, float wi) {
  const float v = __fmul_rn(x, inv);
  return has_w ? __fmul_rn(v, wi) : v;
}
__device__ __forceinline__ float normed(float x, float inv, const float* w, int i) {
  return normed_by(x, inv, w != nullptr, w ? w[i] : 0.0f);
}

}  // namespace memra::cuda
