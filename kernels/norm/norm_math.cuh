#pragma once
// The RMSNorm arithmetic every CUDA norm kernel shares (norm.cu, the fused q/k head norm + RoPE
// of rope.cu): one definition, so fused and unfused forms give the same bits.
namespace memra::cuda {

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
