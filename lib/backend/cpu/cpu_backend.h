#pragma once
// The CPU reference backend: f32 compute on dequantized weight rows, f64 sums for norms and
// softmax, threads over output rows (results never depend on the thread count: every output
// element is computed by one thread in a fixed order).
#include <memory>

#include "backend/backend.h"

namespace memra::backend {

struct CpuBackendOptions {
  int threads = 0;  // <= 0: all hardware threads
  // Quantize matmul activations to the weight's vec_dot_type (q8_0 / q8_1 / q8_K; f16 for F16
  // weights) and use the integer block dot product, the numeric class of llama.cpp's CPU path
  // and of the GPU's int8 kernels. Off: exact f32 activations.
  bool quantize_activations = false;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& opts);

}  // namespace memra::backend
