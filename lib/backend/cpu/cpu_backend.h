#pragma once
// The CPU reference backend: f32 compute on dequantized weight rows, f64 sums for norms and
// softmax, threads over output rows (results never depend on the thread count: every output
// element is computed by one thread in a fixed order).
#include <memory>

#include "backend/backend.h"

namespace memra::backend {

// How attention rounds. Exact: f32 scores, f64 softmax sums and V accumulation on the dequantized
// cache. GgmlFlashAttn: llama.cpp's CPU flash-attention rounding (ggml one-chunk kernel: Q rounded
// to f16, f16 K.Q dot summed in f64, online softmax in f32 with expf, V accumulated in an f16
// vector), the numeric class of llama.cpp's default CPU run (F16 KV, flash attention on). It
// applies only where K and V are both cached as F16 and the batch is shorter than 64 rows (ggml
// runs an f32 tiled kernel from 64 query rows on, which the exact path approximates); every other
// case takes the exact path.
enum class AttentionNumerics { Exact, GgmlFlashAttn };
// Exact: tanh-approximation GELU in f32. GgmlF16Table: llama.cpp's CPU GELU, a table indexed by
// the argument rounded to f16 whose entries are the f32 GELU rounded to f16 (arguments <= -10
// give 0, >= 10 pass through).
enum class GeluNumerics { Exact, GgmlF16Table };

struct CpuBackendOptions {
  int threads = 0;  // <= 0: all hardware threads
  // Quantize matmul activations to the weight's vec_dot_type (q8_0 / q8_1 / q8_K; f16 for F16
  // weights) and use the integer block dot product, the numeric class of llama.cpp's CPU path
  // and of the GPU's int8 kernels. Off: exact f32 activations.
  bool quantize_activations = false;
  AttentionNumerics attention_numerics = AttentionNumerics::Exact;
  GeluNumerics gelu_numerics = GeluNumerics::Exact;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& opts);

}  // namespace memra::backend
