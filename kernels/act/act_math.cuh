#pragma once
// The activation functions as every CUDA kernel computes them (act.cu, the fused GLU epilogue of
// the mmvs matvec): one definition, so the fused and unfused forms stay bit-identical.
#include "act/act_kernels.h"

namespace memra::cuda {

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanhf(k * x * (1.0f + 0.044715f * x * x)));
}
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
template <ActKind A>
__device__ __forceinline__ float act(float x) {
  static_assert(A != ActKind::SwigluOai, "SwigluOai is a GLU of two inputs (swiglu_oai)");
  if constexpr (A == ActKind::Silu) return silu(x);
  else if constexpr (A == ActKind::GeluTanh) return gelu_tanh(x);
  else return sigmoid(x);
}
__device__ __forceinline__ float swiglu_oai(float gate, float up) {
  const float x = fminf(gate, 7.0f), y = fminf(fmaxf(up, -7.0f), 7.0f);
  return __fmul_rn(x / (1.0f + expf(-1.702f * x)), y + 1.0f);
}

}  // namespace memra::cuda
