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
// vector), the numeric class of llama.cpp's default CPU run (F16 KV, flash attention on); it
// applies where K and V are both cached as F16. GgmlFlashAttnF32Cache: the same, and also where
// both are cached as F32, rounded to f16 first, as llama.cpp's graph casts an F32 cache for flash
// attention when flash attention is on (minimax-m3's reference ran so: 4.1e-7 of max|logit| with
// this and F32Order::Ggml, 1.4e-3 with the exact path; with flash attention off, as stories260K's
// kv_f32_fa_off references, llama.cpp does not round and GgmlFlashAttn matches). Batches of 64
// rows or more take the exact path on those (rounded) values, which approximates the f32 tiled
// kernel ggml runs from 64 query rows on. Other cache types always take the exact path.
// Block-sparse attention (MiniMax-M3) keeps the exact path: llama.cpp hands its cache to flash
// attention without the cast.
enum class AttentionNumerics { Exact, GgmlFlashAttn, GgmlFlashAttnF32Cache };
// The order of f32 arithmetic. Exact: dot products in 32 f32 lanes summed in f64, RoPE rotations
// unfused. Ggml: that of llama.cpp's x86-64 CPU build (AVX2/FMA), so that the same inputs give
// bit-identical q/k/v: F32-weight matmuls and the sparse-attention indexer scores in tinyBLAS's
// order (8 FMA lanes over the row, then its horizontal sum; row lengths a multiple of 8, others
// exact), RoPE rotations contracted the way GCC does (x0 c - x1 s = fma(x0, c, -(x1 s)), x0 s +
// x1 c = fma(x0, s, x1 c)). It matters where f16 rounding follows (GgmlFlashAttn rounds Q, K and
// V): a last-bit difference before the rounding flips an f16 value now and then, a 2^-11 relative
// jump (measured on minimax-m3: up to 1.7e-4 of max|logit| with Exact order, 4.1e-7 with Ggml).
// Not covered: MoE experts (llama.cpp: mul_mat_id's vec_dot order), norms, non-F32 weights.
enum class F32Order { Exact, Ggml };
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
  F32Order f32_order = F32Order::Exact;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& opts);

}  // namespace memra::backend
