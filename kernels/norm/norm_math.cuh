#pragma once
// The RMSNorm arithmetic every CUDA norm kernel shares (norm.cu, the fused q/k head norm + RoPE
// of rope.cu): one definition, so fused and unfused forms give the same bits.
namespace memra::cuda {

__device__ __forceinline__ float norm_scale(float sumsq, int cols, float eps) {
  return 1.0f / sqrtf(sumsq / (float)cols + eps);
}

__device__ __forceinline__ float normed(float x, float inv, const float* w, int i) {
  const float v = __fmul_rn(x, inv);
  return w ? __fmul_rn(v, w[i]) : v;
}

}  // namespace memra::cuda
